#ifndef STORIES_LIBRARY_ORDER_H
#define STORIES_LIBRARY_ORDER_H

// Loads the shared library `name` (a soname) with `flags`, each of its dependencies first in a dlopen of its own, so
// the dynamic loader's locks are never held long (see library_order.c). Not thread-safe: one caller at a time.
void stories_load_in_order(const char *name, int flags);

#endif
