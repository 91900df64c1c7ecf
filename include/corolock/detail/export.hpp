// Copyright (c) 2026 corolock developers. Distributed under the Boost Software License 1.0.
#ifndef COROLOCK_DETAIL_EXPORT_HPP
#define COROLOCK_DETAIL_EXPORT_HPP

// The shared library is compiled with -fvisibility=hidden: only what is marked COROLOCK_DECL is
// exported. Mark every public non-template class whose members are defined in src/
// (`class COROLOCK_DECL mutex {`) and every such free function (`COROLOCK_DECL void f();`);
// templates, inline functions and plain aggregates need nothing. A static build is unaffected.
#if defined(__GNUC__) || defined(__clang__)
#define COROLOCK_DECL __attribute__((visibility("default")))
#else
#define COROLOCK_DECL
#endif

#endif
