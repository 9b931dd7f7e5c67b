// libkdajit.so has no code of its own: the runtime library is linked in
// whole (package/CMakeLists.txt). A shared library target needs a source.
#include "kdajit/kda.hpp"
#include "kdajit/kda_c.h"
