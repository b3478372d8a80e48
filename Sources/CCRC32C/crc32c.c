#include "crc32c.h"

#include <pthread.h>
#include <string.h>

// CRC-32C, reflected polynomial 0x82F63B78. The state is kept without the pre- and post-inversion, which makes an
// update linear in the state: feeding bytes B after state s gives shift(s, |B|) ^ crc(0, B), where shift(s, n) is
// s fed n zero bytes. That is what lets three streams be computed at once and joined.

static uint32_t table[8][256];
// shift by LONG and SHORT zero bytes, one table per byte of the state.
#define LONG 8192
#define SHORT 256
static uint32_t zeros_long[4][256];
static uint32_t zeros_short[4][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

// a * b modulo the polynomial, both reflected (bit 31 is x^0).
static uint32_t multiply_mod_p(uint32_t a, uint32_t b) {
    uint32_t m = (uint32_t)1 << 31, product = 0;
    for (;;) {
        if (a & m) {
            product ^= b;
            if ((a & (m - 1)) == 0) break;
        }
        m >>= 1;
        b = (b & 1) ? (b >> 1) ^ 0x82F63B78u : b >> 1;
    }
    return product;
}

// Feeding n zero bytes multiplies the state by x^(8n): that power is found by squaring (a few dozen steps), and
// each table entry is one multiplication, instead of feeding n zero bytes to each of the 1,024 entries (8 million
// steps for LONG: 20 ms at every process's first checksum).
static void build_zeros(uint32_t zeros[4][256], size_t count) {
    uint32_t power = (uint32_t)1 << 31;       // x^0
    uint32_t square = (uint32_t)1 << 30;      // x^1, then x^2, x^4, ...
    for (size_t bits = count * 8; bits; bits >>= 1) {
        if (bits & 1) power = multiply_mod_p(square, power);
        square = multiply_mod_p(square, square);
    }
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) zeros[k][b] = multiply_mod_p(power, b << (8 * k));
    }
}

static void build_tables(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = n;
        for (int k = 0; k < 8; k++) crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
        table[0][n] = crc;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t crc = table[0][n];
        for (int k = 1; k < 8; k++) {
            crc = table[0][crc & 0xff] ^ (crc >> 8);
            table[k][n] = crc;
        }
    }
    build_zeros(zeros_long, LONG);
    build_zeros(zeros_short, SHORT);
}

static inline uint32_t shift(uint32_t zeros[4][256], uint32_t state) {
    return zeros[0][state & 0xff] ^ zeros[1][(state >> 8) & 0xff] ^ zeros[2][(state >> 16) & 0xff]
        ^ zeros[3][state >> 24];
}

static uint32_t crc32c_table(uint32_t crc, const unsigned char *p, size_t length) {
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        word ^= crc;
        crc = table[7][word & 0xff] ^ table[6][(word >> 8) & 0xff] ^ table[5][(word >> 16) & 0xff]
            ^ table[4][(word >> 24) & 0xff] ^ table[3][(word >> 32) & 0xff] ^ table[2][(word >> 40) & 0xff]
            ^ table[1][(word >> 48) & 0xff] ^ table[0][word >> 56];
        p += 8;
        length -= 8;
    }
    while (length--) crc = table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

// Three independent streams keep the CRC unit busy (one instruction per cycle instead of one per three).
#define STREAMS(step, zeros)                                                                                       \
    while (length >= 3 * (step)) {                                                                                 \
        uint64_t c1 = 0, c2 = 0;                                                                                   \
        const unsigned char *end = p + (step);                                                                     \
        do {                                                                                                       \
            uint64_t w0, w1, w2;                                                                                   \
            memcpy(&w0, p, 8);                                                                                     \
            memcpy(&w1, p + (step), 8);                                                                            \
            memcpy(&w2, p + 2 * (step), 8);                                                                        \
            c0 = _mm_crc32_u64(c0, w0);                                                                            \
            c1 = _mm_crc32_u64(c1, w1);                                                                            \
            c2 = _mm_crc32_u64(c2, w2);                                                                            \
            p += 8;                                                                                                \
        } while (p < end);                                                                                         \
        c0 = shift(zeros, (uint32_t)c0) ^ (uint32_t)c1;                                                            \
        c0 = shift(zeros, (uint32_t)c0) ^ (uint32_t)c2;                                                            \
        p += 2 * (step);                                                                                           \
        length -= 3 * (step);                                                                                      \
    }

__attribute__((target("sse4.2"))) static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *p,
                                                                  size_t length) {
    uint64_t c0 = crc;
    STREAMS(LONG, zeros_long)
    STREAMS(SHORT, zeros_short)
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c0 = _mm_crc32_u64(c0, word);
        p += 8;
        length -= 8;
    }
    uint32_t c32 = (uint32_t)c0;
    while (length--) c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

static int hardware_available(void) { return __builtin_cpu_supports("sse4.2"); }

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
#include <arm_acle.h>

static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *p, size_t length) {
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        length -= 8;
    }
    while (length--) crc = __crc32cb(crc, *p++);
    return crc;
}

static int hardware_available(void) { return 1; }

#else
static uint32_t crc32c_hardware(uint32_t crc, const unsigned char *p, size_t length) {
    return crc32c_table(crc, p, length);
}

static int hardware_available(void) { return 0; }
#endif

uint32_t media_crc32c(uint32_t crc, const void *bytes, size_t length) {
    pthread_once(&tables_once, build_tables);
    const unsigned char *p = (const unsigned char *)bytes;
    uint32_t state = ~crc;
    state = hardware_available() ? crc32c_hardware(state, p, length) : crc32c_table(state, p, length);
    return ~state;
}

uint32_t media_crc32c_portable(uint32_t crc, const void *bytes, size_t length) {
    pthread_once(&tables_once, build_tables);
    return ~crc32c_table(~crc, (const unsigned char *)bytes, length);
}
