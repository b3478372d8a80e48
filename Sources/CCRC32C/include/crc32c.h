#ifndef STORIES_CRC32C_H
#define STORIES_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/// Extends `crc` (0 to start) with the CRC-32C (Castagnoli) of `length` bytes at `bytes`. Uses the CPU's CRC
/// instructions where they exist (SSE 4.2 on x86-64, three streams at once; the CRC extension on ARM64), a table
/// otherwise.
uint32_t media_crc32c(uint32_t crc, const void *bytes, size_t length);

/// The same value computed with tables only: the reference the fast path is tested against.
uint32_t media_crc32c_portable(uint32_t crc, const void *bytes, size_t length);

#endif
