// fmt for the analysis sources that format into buffers (fmt::format_to) (private).
//
// fmt/core.h only declares fmt::detail::vformat_to<char>; the definition is in fmt/format.h and
// Debian's libfmt exports an instantiation. But libfmt is built by GCC, and clang mangles that
// function's signature differently (the std::conditional inside buffer_context), so a clang
// build (the fuzz preset) finds no definition for what it compiled against fmt/core.h alone.
// With fmt/format.h every such source instantiates the template itself (a weak symbol, as for
// any template), so objprof_analysis links with either compiler without another library's
// objects providing it (before the split, the IR's sources happened to).
#pragma once

#include <fmt/format.h>
