/* kdajit's public symbols: the library is built with hidden visibility and
 * exports only what these macros mark (and its version script lets through).
 * C and C++. */
#ifndef KDAJIT_EXPORT_H
#define KDAJIT_EXPORT_H

#if defined(__GNUC__)
#define KDA_API __attribute__((visibility("default")))
#else
#define KDA_API
#endif

#endif
