"""Adapters that put f46's GEMMs under other libraries' model code while keeping that code's
modules, parameters and state_dict keys: Hugging Face transformers (f46.integrations.
transformers) and torchtitan (f46.integrations.torchtitan). f46.convert_model uses them; neither
library is imported unless a model of it is converted."""
