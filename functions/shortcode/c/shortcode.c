/* Short codes for URLs: the 64-bit FNV-1a hash of the bytes, written as
 * SHORTCODE_LEN base62 digits (least significant first). Deterministic, so a
 * URL always gets the same code. 62^10 > 2^59: the code keeps all but the
 * top ~5 bits of the hash. */
#include <stddef.h>
#include <stdint.h>

#define SHORTCODE_LEN 10

static const char ALPHABET[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

uint64_t shortcode_fnv1a(const uint8_t *data, size_t len) {
    uint64_t hash = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        hash ^= data[i];
        hash *= 0x100000001b3ULL;
    }
    return hash;
}

/* Writes exactly SHORTCODE_LEN bytes (no terminating NUL) to `out`. */
void shortcode_encode(const uint8_t *data, size_t len, char *out) {
    uint64_t hash = shortcode_fnv1a(data, len);
    for (int i = 0; i < SHORTCODE_LEN; i++) {
        out[i] = ALPHABET[hash % 62];
        hash /= 62;
    }
}
