/* The C API of libsfs-kv (docs/kv.md "C API"), for bindings: the C++ API of
 * kv.h behind opaque handles. Every int-returning call returns 0 (or, for
 * a get, 1 = hit / 0 = miss) on success and a negative errno on failure;
 * sfs_kv_last_error() then has a one-line reason (per thread). Batched
 * calls fill one entry per item. Thread-safe as kv.h. */
#ifndef SFS_KV_C_H
#define SFS_KV_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sfs_kv sfs_kv;        /* a connection (KvClient) */
typedef struct sfs_kv_ns sfs_kv_ns;  /* a namespace (KvNamespace) */

typedef struct sfs_kv_id {
  const void* key;   /* 1..64 bytes */
  size_t key_len;
  const void* group; /* 0..64 bytes; NULL/0 = the block alone */
  size_t group_len;
} sfs_kv_id;

int sfs_kv_connect(const char* mds_address, sfs_kv** out);
void sfs_kv_close(sfs_kv* kv);
int sfs_kv_open(sfs_kv* kv, const char* name, uint64_t block_size, sfs_kv_ns** out);
void sfs_kv_ns_close(sfs_kv_ns* ns);

int sfs_kv_put(sfs_kv_ns* ns, const sfs_kv_id* id, const void* data, size_t len, uint32_t ttl_s);
/* 1: the block is in buf; 0: a miss. */
int sfs_kv_get_into(sfs_kv_ns* ns, const sfs_kv_id* id, void* buf, size_t len, uint32_t lease_ms);
/* found[i] = 1 iff ids[i] is there. */
int sfs_kv_exists(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint8_t* found, uint32_t lease_ms);
int sfs_kv_remove(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint8_t* removed);
int sfs_kv_pin(sfs_kv_ns* ns, const sfs_kv_id* ids, size_t n, uint32_t pin_ms);
/* results[i]: as sfs_kv_put / sfs_kv_get_into for item i; returns 0. */
int sfs_kv_multi_put(sfs_kv_ns* ns, const sfs_kv_id* ids, const void* const* data, size_t n,
                     uint32_t ttl_s, int* results);
int sfs_kv_multi_get(sfs_kv_ns* ns, const sfs_kv_id* ids, void* const* bufs, size_t n,
                     uint32_t lease_ms, int* results);

/* The same, started on a thread of the connection's: returns 0 at once (or
 * a negative errno for bad arguments, and done is not called), and calls
 * done(arg, results, n) on that thread once every item's outcome is in;
 * results as the calls above fill them, valid during the call (and
 * sfs_kv_last_error() there gives the reason of a failed one). ids, the
 * bytes they point to, data/bufs and ns must stay valid until done runs;
 * sfs_kv_close waits for calls still running. */
typedef void (*sfs_kv_done)(void* arg, const int* results, size_t n);
int sfs_kv_multi_put_async(sfs_kv_ns* ns, const sfs_kv_id* ids, const void* const* data, size_t n,
                           uint32_t ttl_s, sfs_kv_done done, void* arg);
int sfs_kv_multi_get_async(sfs_kv_ns* ns, const sfs_kv_id* ids, void* const* bufs, size_t n,
                           uint32_t lease_ms, sfs_kv_done done, void* arg);
/* Chained SHA-256 chunk keys (kv_keys.h): writes min(n_tokens / chunk_tokens,
 * max_keys) keys of 32 bytes to out; returns how many full chunks there are. */
size_t sfs_kv_chain_keys(const void* salt, size_t salt_len, const char* model, const char* layout,
                         const uint32_t* tokens, size_t n_tokens, uint32_t chunk_tokens,
                         uint8_t* out, size_t max_keys);

const char* sfs_kv_last_error(void);

#ifdef __cplusplus
}
#endif
#endif /* SFS_KV_C_H */
