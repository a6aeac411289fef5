/* samebits/export.h - SB_API marks the functions the shared library exports.
 *
 * The library is compiled with -fvisibility=hidden, so only functions whose
 * declaration carries SB_API are visible outside it; internal functions
 * (sb_ref_*, sb_cpu_*, sb_fail, ...) stay inside. Every public function
 * declared under include/samebits/ carries SB_API; tests/check_exports.sh
 * compares the shared library's dynamic symbols with these headers.
 *
 * On Windows-style targets a DLL needs dllexport while it is built and
 * dllimport where it is used: define SB_BUILD_DLL when building samebits as
 * a DLL and SB_USE_DLL when linking against one; a static build needs
 * neither. */
#ifndef SAMEBITS_EXPORT_H
#define SAMEBITS_EXPORT_H

#if defined(_WIN32) || defined(__CYGWIN__)
#  if defined(SB_BUILD_DLL)
#    define SB_API __declspec(dllexport)
#  elif defined(SB_USE_DLL)
#    define SB_API __declspec(dllimport)
#  else
#    define SB_API
#  endif
#elif defined(__GNUC__) && __GNUC__ >= 4
#  define SB_API __attribute__((visibility("default")))
#else
#  define SB_API
#endif

#endif
