/* dispatch.c - the engine's exported functions (e5.h), each forwarded to a copy of e5q.c.
 *
 * build.py compiles e5q.c once per instruction set, renamed by E5_VARIANT (e5.h), and tells
 * this file which copies it has with E5_WITH_AVX512VNNI / E5_WITH_AVX2. When the library is
 * loaded, the best copy this CPU can run is chosen (__builtin_cpu_supports), so a virtualenv
 * or image moved to an older x86-64 CPU runs the AVX2 or baseline copy instead of crashing
 * on an unknown instruction. A model remembers the copy that loaded it: the prepared weights
 * and every later call stay with one copy even if e5_use_variant changes the choice.
 */
#include "e5.h"
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define E5_X86 1
#endif

/* One copy's functions, with the model as void * so the table has one type. */
typedef struct {
    const char *name;
    int (*runs)(void);
    void *(*load)(const char *path);
    void (*free)(void *m);
    int (*token_count)(void *m, const char *text, int is_query);
    int (*dim)(const void *m);
    const char *(*kernel)(void);
    void (*dot_i8)(const int8_t *m, int64_t rows, int dim, const int8_t *q, int32_t *out);
    void (*dot_i8_at)(const int8_t *m, int dim, const int64_t *at, int64_t n, const int8_t *q,
                      int32_t *out);
    int64_t (*hamming_top)(const uint64_t *bits, int64_t rows, int words, const uint64_t *q,
                           const int32_t *owners, const int8_t *kinds, int32_t owner,
                           uint32_t kindmask, int64_t want, int64_t *out);
    int (*embed)(void *m, const char *text, int is_query, float *out);
    int (*embed_batch)(void *m, const char **texts, int n, int is_query, float *out);
} variant;

/* The declarations of copy V (as e5.h renames them) and thin wrappers of the table's type. */
#define COPY(V)                                                                            \
    typedef struct V##_model V##_model;                                                    \
    V##_model *V##_load(const char *path);                                                 \
    void V##_free(V##_model *m);                                                           \
    int V##_token_count(V##_model *m, const char *text, int is_query);                     \
    int V##_dim(const V##_model *m);                                                       \
    const char *V##_kernel(void);                                                          \
    void V##_dot_i8(const int8_t *m, int64_t rows, int dim, const int8_t *q, int32_t *out); \
    void V##_dot_i8_at(const int8_t *m, int dim, const int64_t *at, int64_t n,              \
                       const int8_t *q, int32_t *out);                                     \
    int64_t V##_hamming_top(const uint64_t *bits, int64_t rows, int words, const uint64_t *q, \
                            const int32_t *owners, const int8_t *kinds, int32_t owner,     \
                            uint32_t kindmask, int64_t want, int64_t *out);                \
    int V##_embed(V##_model *m, const char *text, int is_query, float *out);               \
    int V##_embed_batch(V##_model *m, const char **texts, int n, int is_query, float *out); \
    static void *V##_load_(const char *p) { return V##_load(p); }                          \
    static void V##_free_(void *m) { V##_free(m); }                                        \
    static int V##_count_(void *m, const char *t, int q) { return V##_token_count(m, t, q); } \
    static int V##_dim_(const void *m) { return V##_dim(m); }                              \
    static int V##_embed_(void *m, const char *t, int q, float *o) {                       \
        return V##_embed(m, t, q, o);                                                      \
    }                                                                                      \
    static int V##_batch_(void *m, const char **t, int n, int q, float *o) {               \
        return V##_embed_batch(m, t, n, q, o);                                             \
    }
#define ENTRY(V, NAME, RUNS)                                                               \
    { NAME, RUNS, V##_load_, V##_free_, V##_count_, V##_dim_, V##_kernel, V##_dot_i8,      \
      V##_dot_i8_at, V##_hamming_top, V##_embed_, V##_batch_ }

/* What each copy was compiled with (build.py's flags) must all be present at run time;
 * gcc's checks include the operating system's support for the wider registers. */
#if defined(E5_X86) && defined(E5_WITH_AVX512VNNI)
COPY(e5_avx512vnni)
static int runs_avx512vnni(void) {
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
           __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx2") &&
           __builtin_cpu_supports("fma");
}
#endif
#if defined(E5_X86) && defined(E5_WITH_AVX2)
COPY(e5_avx2)
static int runs_avx2(void) {
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif
COPY(e5_generic)
static int runs_always(void) { return 1; }

static const variant VARIANTS[] = {  /* best first */
#if defined(E5_X86) && defined(E5_WITH_AVX512VNNI)
    ENTRY(e5_avx512vnni, "avx512vnni", runs_avx512vnni),
#endif
#if defined(E5_X86) && defined(E5_WITH_AVX2)
    ENTRY(e5_avx2, "avx2", runs_avx2),
#endif
    ENTRY(e5_generic, "generic", runs_always),
};
#define N_VARIANTS ((int)(sizeof(VARIANTS) / sizeof(VARIANTS[0])))

static const variant *current = &VARIANTS[N_VARIANTS - 1];
static char runnable[64];

/* At load time, before any call: the best copy this CPU runs, and the list of them. */
__attribute__((constructor)) static void choose(void) {
#ifdef E5_X86
    __builtin_cpu_init();  /* needed before __builtin_cpu_supports in a constructor */
#endif
    const variant *best = NULL;
    for (int i = 0; i < N_VARIANTS; i++) {
        if (!VARIANTS[i].runs()) continue;
        if (!best) best = &VARIANTS[i];
        if (runnable[0]) strcat(runnable, " ");
        strcat(runnable, VARIANTS[i].name);
    }
    current = best;
}

const char *e5_variant(void) { return current->name; }
const char *e5_variants(void) { return runnable; }

int e5_use_variant(const char *name) {
    for (int i = 0; i < N_VARIANTS; i++)
        if (strcmp(VARIANTS[i].name, name) == 0 && VARIANTS[i].runs()) {
            current = &VARIANTS[i];
            return 0;
        }
    return -1;
}

/* The handle callers hold: the copy that loaded the model, and that copy's model. */
struct e5_model { const variant *v; void *m; };

e5_model *e5_load(const char *path) {
    const variant *v = current;
    void *inner = v->load(path);
    if (!inner) return NULL;
    e5_model *m = (e5_model *)malloc(sizeof(e5_model));
    if (!m) { v->free(inner); return NULL; }
    m->v = v; m->m = inner;
    return m;
}

void e5_free(e5_model *m) {
    if (!m) return;
    m->v->free(m->m);
    free(m);
}

int e5_token_count(e5_model *m, const char *text, int is_query) {
    return m->v->token_count(m->m, text, is_query);
}

int e5_dim(const e5_model *m) { return m->v->dim(m->m); }

const char *e5_kernel(void) { return current->kernel(); }

void e5_dot_i8(const int8_t *m, int64_t rows, int dim, const int8_t *q, int32_t *out) {
    current->dot_i8(m, rows, dim, q, out);
}

void e5_dot_i8_at(const int8_t *m, int dim, const int64_t *at, int64_t n, const int8_t *q,
                  int32_t *out) {
    current->dot_i8_at(m, dim, at, n, q, out);
}

int64_t e5_hamming_top(const uint64_t *bits, int64_t rows, int words, const uint64_t *q,
                       const int32_t *owners, const int8_t *kinds, int32_t owner,
                       uint32_t kindmask, int64_t want, int64_t *out) {
    return current->hamming_top(bits, rows, words, q, owners, kinds, owner, kindmask, want, out);
}

int e5_embed(e5_model *m, const char *text, int is_query, float *out) {
    return m->v->embed(m->m, text, is_query, out);
}

int e5_embed_batch(e5_model *m, const char **texts, int n, int is_query, float *out) {
    return m->v->embed_batch(m->m, texts, n, is_query, out);
}
