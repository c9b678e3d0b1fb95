// f46 error type and the one checking macro family (STYLE: never exit()).
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace f46 {

// Every invalid argument and every backend failure is reported as an f46::Error whose
// message names the argument and the offending values.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

namespace detail {
template <typename... Args>
[[noreturn]] void throw_error(const char* file, int line, const char* cond, const Args&... args) {
  std::ostringstream os;
  os << "f46: ";
  (os << ... << args);
  os << " [check `" << cond << "` failed at " << file << ":" << line << "]";
  throw Error(os.str());
}
}  // namespace detail

}  // namespace f46

// F46_CHECK(cond, "message parts", value, ...): throws f46::Error when cond is false.
#define F46_CHECK(cond, ...)                                                       \
  do {                                                                             \
    if (!(cond)) ::f46::detail::throw_error(__FILE__, __LINE__, #cond, __VA_ARGS__); \
  } while (0)
