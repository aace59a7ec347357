/*
 * A stand-in libcuda.so.1 for rdma4j's tests on machines without an NVIDIA driver. The tests
 * compile it with gcc against native-headers/cuda_driver.h, so a signature that drifts from our
 * header fails the build of the stub.
 *
 * It is a test double, not an emulator: "device memory" is host memory behind fake addresses
 * (so a device pointer passed where a host pointer belongs is not silently accepted). Streams
 * are asynchronous as the driver's are: each has a worker thread that executes its queued
 * copies, memsets, event records and event waits in order, so code that reads a result before
 * waiting for the stream or an event reads stale memory here too. Events carry the wall-clock
 * time at which their stream reached them. Nothing here says anything about a real GPU's speed;
 * it checks the Java layer's calls, arguments, ordering, error handling and cleanup.
 *
 * What the real driver enforces and the stub enforces too: cuInit first (else
 * CUDA_ERROR_NOT_INITIALIZED), a current context for memory/stream/event calls (per thread),
 * copies inside live allocations, page-aligned cuMemGetHandleForAddressRange ranges, events
 * recorded (with timing) before cuEventElapsedTime.
 *
 * Behaviour is chosen by environment variables (read once, at the first call):
 *   STUB_CUDA_INIT_RESULT    CUresult that cuInit returns (default 0)
 *   STUB_CUDA_DEVICE_COUNT   number of devices (default 1, at most 8)
 *   STUB_CUDA_DRIVER_VERSION cuDriverGetVersion value (default 12040)
 *   STUB_CUDA_OP_DELAY_US    microseconds a stream's worker waits before each copy or memset
 *                            (default 0), so that work still queued is observable
 *   STUB_CUDA_SKIP_EVENT_WAITS  1: events report completion at once and cuStreamWaitEvent
 *                            does not wait, as if the caller had skipped its waits (tests use it
 *                            to show that a missing wait gives a wrong result)
 * and, from tests in the same process, by the rdma4j_stub_* control functions at the end.
 */
#define _GNU_SOURCE
#include "cuda_driver.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define MAX_FUNCTIONS 96
#define MAX_DEVICES 8
#define MAX_ALLOCATIONS 4096
#define MAX_HANDLES 1024
#define FAKE_DEVICE_BASE 0x0000100000000000ULL
#define DEVICE_MEMORY_LIMIT (1ULL << 30)
#define PAGE 4096ULL

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- per-function call counts and injected results ---- */
static struct {
    char name[48];
    long calls;
    int inject;
    int times; /* <0: always, 0: none, >0: that many calls */
} functions[MAX_FUNCTIONS];
static int function_count;

static int find_function(const char *name) {
    for (int i = 0; i < function_count; i++) {
        if (strcmp(functions[i].name, name) == 0) return i;
    }
    if (function_count == MAX_FUNCTIONS) abort();
    snprintf(functions[function_count].name, sizeof functions[0].name, "%s", name);
    return function_count++;
}

static int enter(const char *name) {
    pthread_mutex_lock(&lock);
    int i = find_function(name);
    functions[i].calls++;
    int result = 0;
    if (functions[i].times != 0) {
        result = functions[i].inject;
        if (functions[i].times > 0) functions[i].times--;
    }
    pthread_mutex_unlock(&lock);
    return result;
}

#define ENTER() do { int r_ = enter(__func__); if (r_ != CUDA_SUCCESS) return (CUresult) r_; } while (0)

/* ---- configuration and driver state ---- */
static int configured, init_result, device_count = 1, driver_version = 12040;
static int initialized;
static int corrupt_next_dtoh;
static int op_delay_us, skip_event_waits;

static int env_int(const char *name, int fallback) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : fallback;
}

static void configure(void) {
    if (configured) return;
    configured = 1;
    init_result = env_int("STUB_CUDA_INIT_RESULT", init_result);
    device_count = env_int("STUB_CUDA_DEVICE_COUNT", device_count);
    if (device_count < 0 || device_count > MAX_DEVICES) device_count = MAX_DEVICES;
    driver_version = env_int("STUB_CUDA_DRIVER_VERSION", driver_version);
    op_delay_us = env_int("STUB_CUDA_OP_DELAY_US", op_delay_us);
    skip_event_waits = env_int("STUB_CUDA_SKIP_EVENT_WAITS", skip_event_waits);
}

#define REQUIRE_INIT() do { if (!initialized) return CUDA_ERROR_NOT_INITIALIZED; } while (0)

struct CUctx_st { int device; int retained; };
static struct CUctx_st contexts[MAX_DEVICES];
static __thread CUcontext current;

#define REQUIRE_CONTEXT() do { REQUIRE_INIT(); \
    if (current == NULL || current->retained == 0) return CUDA_ERROR_INVALID_CONTEXT; } while (0)

static int valid_device(CUdevice d) { return d >= 0 && d < device_count; }

/* ---- errors: the documented names, and descriptions after the driver's ---- */
static const struct { int code; const char *name; const char *text; } errors[] = {
    {0, "CUDA_SUCCESS", "no error"},
    {1, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {2, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {3, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {4, "CUDA_ERROR_DEINITIALIZED", "driver shutting down"},
    {34, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {46, "CUDA_ERROR_DEVICE_UNAVAILABLE", "CUDA-capable device(s) is/are busy or unavailable"},
    {100, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {101, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {201, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {400, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {600, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {712, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED", "part or all of the requested memory range is already mapped"},
    {713, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {803, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH", "system has unsupported display driver / cuda driver combination"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static int error_index(CUresult e) {
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++) {
        if (errors[i].code == (int) e) return (int) i;
    }
    return -1;
}

CUresult cuGetErrorName(CUresult error, const char **pStr) {
    ENTER();
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    int i = error_index(error);
    if (i < 0) { *pStr = NULL; return CUDA_ERROR_INVALID_VALUE; }
    *pStr = errors[i].name;
    return CUDA_SUCCESS;
}

CUresult cuGetErrorString(CUresult error, const char **pStr) {
    ENTER();
    if (pStr == NULL) return CUDA_ERROR_INVALID_VALUE;
    int i = error_index(error);
    if (i < 0) { *pStr = NULL; return CUDA_ERROR_INVALID_VALUE; }
    *pStr = errors[i].text;
    return CUDA_SUCCESS;
}

/* ---- initialization, devices ---- */
CUresult cuInit(unsigned int flags) {
    ENTER();
    pthread_mutex_lock(&lock);
    configure();
    int r = flags != 0 ? CUDA_ERROR_INVALID_VALUE : init_result;
    if (r == CUDA_SUCCESS) initialized = 1;
    pthread_mutex_unlock(&lock);
    return (CUresult) r;
}

CUresult cuDriverGetVersion(int *v) {
    ENTER();
    if (v == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    configure();
    pthread_mutex_unlock(&lock);
    *v = driver_version;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count) {
    ENTER(); REQUIRE_INIT();
    if (count == NULL) return CUDA_ERROR_INVALID_VALUE;
    *count = device_count;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal) {
    ENTER(); REQUIRE_INIT();
    if (device == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (name == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t) len, "rdma4j stub libcuda device %d (not a GPU)", dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char *bus, int len, CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (bus == NULL || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(bus, (size_t) len, "0000:%02X:00.0", 0x17 + dev);
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (pi == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    switch (attrib) {
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *pi = 9; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *pi = 0; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *pi = 132; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *pi = 0x17 + dev; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *pi = 0; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *pi = 0; break;
        case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        case CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED:
        case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED: *pi = 1; break;
        case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *pi = 32; break;
        default:
            if ((int) attrib <= 0 || (int) attrib > 200) return CUDA_ERROR_INVALID_VALUE;
            *pi = 0;
    }
    return CUDA_SUCCESS;
}

static void wait_for_streams(int blocking_only);

/* ---- device memory: fake addresses backed by host memory, never reused ---- */
static struct { CUdeviceptr base; size_t size; unsigned char *host; int device; int live; } allocations[MAX_ALLOCATIONS];
static int allocation_count;
static CUdeviceptr next_address = FAKE_DEVICE_BASE;
static unsigned long long bytes_in_use;

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (bytes == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = DEVICE_MEMORY_LIMIT;
    return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
    ENTER(); REQUIRE_CONTEXT();
    if (free_bytes == NULL || total == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *total = DEVICE_MEMORY_LIMIT;
    *free_bytes = DEVICE_MEMORY_LIMIT - bytes_in_use;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
    ENTER(); REQUIRE_CONTEXT();
    if (dptr == NULL || size == 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (size > DEVICE_MEMORY_LIMIT - bytes_in_use || allocation_count == MAX_ALLOCATIONS) {
        r = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        unsigned char *host = malloc(size);
        if (host == NULL) {
            r = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            /* like the real driver's small-allocation pools: 512-byte aligned, not page aligned */
            int i = allocation_count++;
            allocations[i].base = next_address;
            allocations[i].size = size;
            allocations[i].host = host;
            allocations[i].device = current->device;
            allocations[i].live = 1;
            next_address += (size + 511) / 512 * 512 + 512;
            bytes_in_use += size;
            *dptr = allocations[i].base;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* the live allocation holding [p, p + n), or -1; callers hold the lock */
static int allocation_of(CUdeviceptr p, size_t n) {
    for (int i = 0; i < allocation_count; i++) {
        if (allocations[i].live && p >= allocations[i].base && p - allocations[i].base <= allocations[i].size
                && n <= allocations[i].size - (p - allocations[i].base)) {
            return i;
        }
    }
    return -1;
}

static unsigned char *device_bytes(CUdeviceptr p, size_t n) {
    int i = allocation_of(p, n);
    return i < 0 ? NULL : allocations[i].host + (p - allocations[i].base);
}

/* Like the driver's, frees wait for queued work first (no worker may touch freed memory). */
CUresult cuMemFree_v2(CUdeviceptr dptr) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    wait_for_streams(0);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < allocation_count; i++) {
        if (allocations[i].live && allocations[i].base == dptr) {
            allocations[i].live = 0;
            free(allocations[i].host);
            allocations[i].host = NULL;
            bytes_in_use -= allocations[i].size;
            r = CUDA_SUCCESS;
            break;
        }
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- streams: a FIFO of operations each, executed in order by a worker thread of the stub ---- */

/*
 * Like the driver, an asynchronous call only validates and queues; the stream's worker executes
 * the operations one after another, after STUB_CUDA_OP_DELAY_US for each copy or memset, so
 * work queued on a stream is really not done until the stream or an event after it says so.
 * The legacy default stream (NULL) is a stream of its own here; synchronous copies wait for it
 * and for every stream created without CU_STREAM_NON_BLOCKING, as the legacy stream's implicit
 * synchronization would make them.
 */
enum op_kind { OP_COPY, OP_MEMSET, OP_RECORD, OP_WAIT };
struct op {
    enum op_kind kind;
    void *dst;
    const void *src;
    size_t n;
    unsigned char value;
    int device_to_host;
    struct CUevent_st *event;
    unsigned long seq; /* OP_RECORD: the record it completes; OP_WAIT: the record it waits for */
};
#define QUEUE_DEPTH 256
struct CUstream_st {
    int live, started, stopping;
    unsigned int flags;
    pthread_t worker; /* joined by nobody: detached when the stream is destroyed (the legacy one never is) */
    struct op ops[QUEUE_DEPTH];
    unsigned long head, tail; /* ops[head % QUEUE_DEPTH .. tail) are queued, head is executing */
};
/* recorded: records queued so far; done: the latest of them executed (completed work before it) */
struct CUevent_st { int live; unsigned int flags; unsigned long recorded, done; double millis; };
static struct CUstream_st legacy_stream = {.live = 1};
static struct CUstream_st streams[MAX_HANDLES];
static struct CUevent_st events[MAX_HANDLES];
static int stream_count, event_count;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER; /* with `lock`: a queue or an event moved */

static int valid_stream(CUstream s) {
    return s == NULL || (s >= streams && s < streams + stream_count && s->live);
}

static int valid_event(CUevent e) {
    return e != NULL && e >= events && e < events + event_count && e->live;
}

static struct CUstream_st *stream_of(CUstream s) {
    return s == NULL ? &legacy_stream : s;
}

static double now_millis(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* callers hold the lock */
static int event_complete(const struct CUevent_st *e) {
    return skip_event_waits || e->done >= e->recorded;
}

/* Whether this device-to-host copy is the one to corrupt (rdma4j_stub_corrupt_next_dtoh); callers hold the lock. */
static int take_corruption(int device_to_host, size_t n) {
    int corrupt = device_to_host && n > 0 && corrupt_next_dtoh;
    if (corrupt) corrupt_next_dtoh = 0;
    return corrupt;
}

static void copy_bytes(void *dst, const void *src, size_t n, int corrupt) {
    memmove(dst, src, n);
    if (corrupt) ((unsigned char *) dst)[n / 2] ^= 0x5A;
}

static void *stream_worker(void *arg) {
    struct CUstream_st *s = arg;
    pthread_mutex_lock(&lock);
    for (;;) {
        if (s->head == s->tail) {
            if (s->stopping) break;
            pthread_cond_wait(&changed, &lock);
            continue;
        }
        struct op *o = &s->ops[s->head % QUEUE_DEPTH];
        if (o->kind == OP_WAIT) {
            if (o->event->done < o->seq) {
                pthread_cond_wait(&changed, &lock);
                continue;
            }
        } else if (o->kind == OP_RECORD) {
            if (o->seq > o->event->done) {
                o->event->done = o->seq;
                o->event->millis = now_millis();
            }
        } else {
            /* copies and memsets run without the lock: cuMemFree and friends wait for idle streams first */
            int corrupt = o->kind == OP_COPY && take_corruption(o->device_to_host, o->n);
            int delay = op_delay_us;
            pthread_mutex_unlock(&lock);
            if (delay > 0) usleep((useconds_t) delay);
            if (o->kind == OP_COPY) {
                copy_bytes(o->dst, o->src, o->n, corrupt);
            } else {
                memset(o->dst, o->value, o->n);
            }
            pthread_mutex_lock(&lock);
        }
        s->head++;
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    return NULL;
}

/* Queues `o` on `s` (blocking while the queue is full, as the driver's push buffer does); callers hold the lock. */
static CUresult enqueue(CUstream handle, struct op o) {
    struct CUstream_st *s = stream_of(handle);
    if (!s->started) {
        if (pthread_create(&s->worker, NULL, stream_worker, s) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
        s->started = 1;
    }
    while (s->tail - s->head == QUEUE_DEPTH) pthread_cond_wait(&changed, &lock);
    s->ops[s->tail % QUEUE_DEPTH] = o;
    s->tail++;
    pthread_cond_broadcast(&changed);
    return CUDA_SUCCESS;
}

static int stream_idle(const struct CUstream_st *s) {
    return s->head == s->tail;
}

/* Waits until the legacy stream and every stream (blocking ones only, if asked) ran dry; callers hold the lock. */
static void wait_for_streams(int blocking_only) {
    for (;;) {
        int busy = !stream_idle(&legacy_stream);
        for (int i = 0; i < stream_count && !busy; i++) {
            busy = !stream_idle(&streams[i]) && !(blocking_only && (streams[i].flags & CU_STREAM_NON_BLOCKING));
        }
        if (!busy) return;
        pthread_cond_wait(&changed, &lock);
    }
}

static CUresult copy(void *dst, const void *src, size_t n, int device_to_host) {
    if (dst == NULL || src == NULL) return CUDA_ERROR_INVALID_VALUE;
    wait_for_streams(1);
    copy_bytes(dst, src, n, take_corruption(device_to_host, n));
    return CUDA_SUCCESS;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy(device_bytes(dst, n), src, n, 0);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy(dst, device_bytes(src, n), n, 1);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy(device_bytes(dst, n), device_bytes(src, n), n, 0);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    unsigned char *p = device_bytes(dst, n);
    if (p != NULL) {
        wait_for_streams(1);
        memset(p, uc, n);
    }
    pthread_mutex_unlock(&lock);
    return p == NULL ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

/* validates the stream and the (already translated) addresses now, executes later */
static CUresult copy_async(void *dst, const void *src, size_t n, int device_to_host, CUstream s) {
    if (!valid_stream(s)) return CUDA_ERROR_INVALID_HANDLE;
    if (dst == NULL || src == NULL) return CUDA_ERROR_INVALID_VALUE;
    return enqueue(s, (struct op) {.kind = OP_COPY, .dst = dst, .src = src, .n = n, .device_to_host = device_to_host});
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy_async(device_bytes(dst, n), src, n, 0, s);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy_async(dst, device_bytes(src, n), n, 1, s);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = copy_async(device_bytes(dst, n), device_bytes(src, n), n, 0, s);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t n, CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    unsigned char *p = device_bytes(dst, n);
    CUresult r = !valid_stream(s) ? CUDA_ERROR_INVALID_HANDLE : p == NULL ? CUDA_ERROR_INVALID_VALUE
            : enqueue(s, (struct op) {.kind = OP_MEMSET, .dst = p, .n = n, .value = uc});
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamCreate(CUstream *ps, unsigned int flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (ps == NULL || (flags & ~CU_STREAM_NON_BLOCKING) != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (stream_count < MAX_HANDLES) {
        struct CUstream_st *s = &streams[stream_count++];
        s->live = 1;
        s->flags = flags;
        *ps = s;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamQuery(CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = !valid_stream(s) ? CUDA_ERROR_INVALID_HANDLE
            : stream_idle(stream_of(s)) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamSynchronize(CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = valid_stream(s) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    while (r == CUDA_SUCCESS && !stream_idle(stream_of(s))) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = !valid_stream(s) || !valid_event(e) ? CUDA_ERROR_INVALID_HANDLE
            : skip_event_waits ? CUDA_SUCCESS
            : enqueue(s, (struct op) {.kind = OP_WAIT, .event = e, .seq = e->recorded});
    pthread_mutex_unlock(&lock);
    return r;
}

/* As with the driver, work already queued still runs after this returns; then the worker ends. */
CUresult cuStreamDestroy_v2(CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = s == NULL || !valid_stream(s) ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) {
        s->live = 0;
        s->stopping = 1;
        if (s->started) pthread_detach(s->worker);
        pthread_cond_broadcast(&changed);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- events: completed when the stream's worker reaches their latest record ---- */
CUresult cuEventCreate(CUevent *pe, unsigned int flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (pe == NULL || (flags & ~0x7u) != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_ERROR_OUT_OF_MEMORY;
    if (event_count < MAX_HANDLES) {
        struct CUevent_st *e = &events[event_count++];
        e->live = 1;
        e->flags = flags;
        e->recorded = e->done = 0;
        *pe = e;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventRecord(CUevent e, CUstream s) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = !valid_event(e) || !valid_stream(s) ? CUDA_ERROR_INVALID_HANDLE
            : enqueue(s, (struct op) {.kind = OP_RECORD, .event = e, .seq = e->recorded + 1});
    if (r == CUDA_SUCCESS) e->recorded++;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventQuery(CUevent e) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = !valid_event(e) ? CUDA_ERROR_INVALID_HANDLE : event_complete(e) ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventSynchronize(CUevent e) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = valid_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    while (r == CUDA_SUCCESS && !event_complete(e)) pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
    ENTER(); REQUIRE_CONTEXT();
    if (ms == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (!valid_event(start) || !valid_event(end) || start->recorded == 0 || end->recorded == 0
            || ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)) {
        r = CUDA_ERROR_INVALID_HANDLE;
    } else if (start->done < start->recorded || end->done < end->recorded) {
        r = CUDA_ERROR_NOT_READY;
    } else {
        *ms = (float) (end->millis - start->millis);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuEventDestroy_v2(CUevent e) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    CUresult r = valid_event(e) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    if (r == CUDA_SUCCESS) e->live = 0; /* a queued record or wait still finds the slot: slots are never reused */
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- contexts ---- */
CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    contexts[dev].device = dev;
    contexts[dev].retained++;
    pthread_mutex_unlock(&lock);
    *pctx = &contexts[dev];
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
    ENTER(); REQUIRE_INIT();
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    CUresult r = contexts[dev].retained > 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
    if (r == CUDA_SUCCESS) contexts[dev].retained--;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
    ENTER(); REQUIRE_INIT();
    if (ctx != NULL && (ctx < contexts || ctx >= contexts + MAX_DEVICES || ctx->retained == 0)) {
        return CUDA_ERROR_INVALID_CONTEXT;
    }
    current = ctx;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx) {
    ENTER(); REQUIRE_INIT();
    if (pctx == NULL) return CUDA_ERROR_INVALID_VALUE;
    *pctx = current;
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    wait_for_streams(0);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ---- pinned and registered host memory ---- */
static struct { void *p; size_t size; int registered; int live; } host_ranges[MAX_ALLOCATIONS];
static int host_range_count;

static int host_range_of(const void *p) {
    for (int i = 0; i < host_range_count; i++) {
        const unsigned char *base = host_ranges[i].p;
        if (host_ranges[i].live && (const unsigned char *) p >= base
                && (const unsigned char *) p < base + host_ranges[i].size) {
            return i;
        }
    }
    return -1;
}

static int add_host_range(void *p, size_t size, int registered) {
    if (host_range_count == MAX_ALLOCATIONS) return 0;
    host_ranges[host_range_count].p = p;
    host_ranges[host_range_count].size = size;
    host_ranges[host_range_count].registered = registered;
    host_ranges[host_range_count++].live = 1;
    return 1;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (pp == NULL || size == 0 || (flags & ~0x7u) != 0) return CUDA_ERROR_INVALID_VALUE;
    void *p = NULL;
    if (posix_memalign(&p, PAGE, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    int ok = add_host_range(p, size, 0);
    pthread_mutex_unlock(&lock);
    if (!ok) { free(p); return CUDA_ERROR_OUT_OF_MEMORY; }
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemFreeHost(void *p) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    wait_for_streams(0);
    int i = host_range_of(p);
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    if (i >= 0 && !host_ranges[i].registered && host_ranges[i].p == p) {
        host_ranges[i].live = 0;
        free(p);
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (p == NULL || size == 0 || (flags & ~0xFu) != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = host_range_of(p) >= 0 ? CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED
            : add_host_range(p, size, 1) ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return r;
}

CUresult cuMemHostUnregister(void *p) {
    ENTER(); REQUIRE_CONTEXT();
    pthread_mutex_lock(&lock);
    wait_for_streams(0);
    int i = host_range_of(p);
    CUresult r = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (i >= 0 && host_ranges[i].registered && host_ranges[i].p == p) {
        host_ranges[i].live = 0;
        r = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

/* ---- pointer attributes, dma-buf export ---- */
CUresult cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr) {
    ENTER(); REQUIRE_INIT();
    if (data == NULL) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    int d = allocation_of(ptr, 0);
    int h = d < 0 ? host_range_of((const void *) (uintptr_t) ptr) : -1;
    CUresult r = CUDA_SUCCESS;
    if (d < 0 && h < 0) {
        r = CUDA_ERROR_INVALID_VALUE;
    } else if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) {
        *(unsigned int *) data = d >= 0 ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    } else if (attribute == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL && d >= 0) {
        *(int *) data = allocations[d].device;
    } else if (attribute == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR && d >= 0) {
        *(CUdeviceptr *) data = allocations[d].base;
    } else if (attribute == CU_POINTER_ATTRIBUTE_RANGE_SIZE && d >= 0) {
        *(size_t *) data = allocations[d].size;
    } else {
        r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

#ifndef STUB_CUDA_BEFORE_11_7 /* compiled without it, the stub is a driver that predates dma-buf export */
CUresult cuMemGetHandleForAddressRange(void *handle, CUdeviceptr dptr, size_t size,
                                       CUmemRangeHandleType type, unsigned long long flags) {
    ENTER(); REQUIRE_CONTEXT();
    if (handle == NULL || type != CU_MEM_RANGE_HANDLE_TYPE_DMA_BUF_FD || flags > 1 || size == 0
            || dptr % PAGE != 0 || size % PAGE != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_lock(&lock);
    /* the range must lie in the address space handed out, and overlap a live allocation */
    int overlaps = 0;
    for (int i = 0; i < allocation_count; i++) {
        if (allocations[i].live && allocations[i].base < dptr + size
                && dptr < allocations[i].base + allocations[i].size) {
            overlaps = 1;
        }
    }
    int inside = dptr >= (FAKE_DEVICE_BASE & ~(PAGE - 1)) && dptr + size <= (next_address + PAGE - 1) / PAGE * PAGE;
    pthread_mutex_unlock(&lock);
    if (!overlaps || !inside) return CUDA_ERROR_INVALID_VALUE;
    int fd = memfd_create("rdma4j-stub-dmabuf", MFD_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
    if (ftruncate(fd, (off_t) size) != 0) { close(fd); return CUDA_ERROR_OUT_OF_MEMORY; }
    *(int *) handle = fd;
    return CUDA_SUCCESS;
}
#endif

/* ---- control functions for tests in the same process (not part of the driver API) ---- */

/* The next `times` calls of `function` (negative: all) return `result`; 0 times clears it. */
void rdma4j_stub_inject(const char *function, int result, int times) {
    pthread_mutex_lock(&lock);
    int i = find_function(function);
    functions[i].inject = result;
    functions[i].times = times;
    pthread_mutex_unlock(&lock);
}

long rdma4j_stub_calls(const char *function) {
    pthread_mutex_lock(&lock);
    long calls = functions[find_function(function)].calls;
    pthread_mutex_unlock(&lock);
    return calls;
}

/* Settings that environment variables would give; call before the first cuInit. */
void rdma4j_stub_configure(int init, int devices, int version) {
    pthread_mutex_lock(&lock);
    configured = 1;
    init_result = init;
    device_count = devices < 0 || devices > MAX_DEVICES ? MAX_DEVICES : devices;
    driver_version = version;
    pthread_mutex_unlock(&lock);
}

int rdma4j_stub_live_device_allocations(void) {
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int i = 0; i < allocation_count; i++) n += allocations[i].live;
    pthread_mutex_unlock(&lock);
    return n;
}

int rdma4j_stub_live_host_allocations(void) {
    pthread_mutex_lock(&lock);
    int n = 0;
    for (int i = 0; i < host_range_count; i++) n += host_ranges[i].live;
    pthread_mutex_unlock(&lock);
    return n;
}

int rdma4j_stub_live_streams(void) {
    int n = 0;
    for (int i = 0; i < stream_count; i++) n += streams[i].live;
    return n;
}

int rdma4j_stub_live_events(void) {
    int n = 0;
    for (int i = 0; i < event_count; i++) n += events[i].live;
    return n;
}

int rdma4j_stub_primary_context_retains(int dev) {
    return valid_device(dev) ? contexts[dev].retained : -1;
}

/* The next non-empty device-to-host copy flips one byte in the middle of what it writes. */
void rdma4j_stub_corrupt_next_dtoh(void) {
    pthread_mutex_lock(&lock);
    corrupt_next_dtoh = 1;
    pthread_mutex_unlock(&lock);
}

/* What STUB_CUDA_OP_DELAY_US and STUB_CUDA_SKIP_EVENT_WAITS set; takes effect for the next operations. */
void rdma4j_stub_timing(int delay_us, int skip_waits) {
    pthread_mutex_lock(&lock);
    op_delay_us = delay_us;
    skip_event_waits = skip_waits;
    pthread_mutex_unlock(&lock);
}
