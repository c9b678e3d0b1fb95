// The whole public API of f46.
#pragma once

#include "f46/error.h"
#include "f46/gemm.h"
#include "f46/grouped.h"
#include "f46/quantize.h"
#include "f46/swiglu.h"
#include "f46/tensor.h"
#include "f46/version.h"
