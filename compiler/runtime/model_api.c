/* The C API of a model library (model_api.h), the same source for every model.
 *
 * compiler/runtime/export_library.py writes the model's tables (model_tables.h: its
 * inputs, outputs, intermediate storage, weights and the CPU features its code needs)
 * and compiles this file with them, next to the kernels' object code (which defines
 * graph_run, the model's native entry, and the thread pool of runtime.ll) and the
 * weights (one data section, autosched_weights). An instance is a slot table, as the
 * Python executor's (runtime/graph_executor.py): one int64 address per value of the
 * model, filled at create, so a run is one call of graph_run on it.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "model_api.h"

typedef struct {
  const char *name;
  const char *dtype;
  int ndim;
  const int64_t *shape;
  size_t nbytes;
  size_t itemsize;
  int32_t slot;
} tensor_info;

typedef struct {
  const char *name;  /* LLVM's name of the feature */
  uint32_t leaf, subleaf;
  int reg, bit;      /* cpuid register (0 eax .. 3 edx) and bit */
  uint64_t xcr0;     /* XCR0 bits the OS must enable: the vector registers' state */
} cpu_feature;

typedef struct { int32_t slot; int32_t storage; } value_storage;
typedef struct { int32_t slot; int64_t offset; } constant_data;
typedef struct { int32_t slot; const void *fn; } external_function;

extern const unsigned char autosched_weights[];
extern int32_t graph_run(int64_t *slots);
extern int32_t (*autosched_threads_hook)(void);

#include "model_tables.h"

#define ALIGN 64
#define ERROR_BYTES 512

struct autosched_model {
  int64_t *slots;
  void *inputs[NUM_INPUTS > 0 ? NUM_INPUTS : 1];     /* its own copy of each input */
  unsigned char input_set[NUM_INPUTS > 0 ? NUM_INPUTS : 1];
  void *storage[NUM_STORAGE > 0 ? NUM_STORAGE : 1];  /* intermediate values, planned */
  int num_threads;  /* 0: the count the kernels were compiled with */
  int ran;
  char error[ERROR_BYTES];
};

static char create_error[ERROR_BYTES];

static int fail(autosched_model *m, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(autosched_model *m, int code, const char *fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vsnprintf(m ? m->error : create_error, ERROR_BYTES, fmt, args);
  va_end(args);
  return code;
}

/* A call on a NULL instance: the code, and the message where autosched_last_error(NULL)
 * finds it. */
#define NULL_MODEL() fail(NULL, AUTOSCHED_ERROR_NULL, "%s: model is NULL", __func__)

/* ------------------------------------------------------------------ per-thread state */

/* What the library keeps for each thread that runs its code: the thread count of the
 * instance the thread is running (read by the pool at every parallel loop through
 * runtime.ll's @autosched_threads_hook) and the kernels' workspace (below). Kept under
 * a pthread key, not in __thread variables: thread-local storage would either take the
 * process's small static TLS reserve (initial-exec: a few model libraries loaded into
 * one process exhaust it, and dlopen fails) or need __tls_get_addr from the dynamic
 * loader. Freed when the thread ends. */
#define WORKSPACE_BLOCKS 16

typedef struct { void *ptr; size_t size; int used; } workspace_block;

typedef struct {
  int running_threads;  /* 0: the count the kernels were compiled with */
  workspace_block blocks[WORKSPACE_BLOCKS];
} thread_state;

static pthread_key_t state_key;
static pthread_once_t state_key_once = PTHREAD_ONCE_INIT;

static void state_release(void *arg) {
  thread_state *state = arg;
  for (int i = 0; i < WORKSPACE_BLOCKS; i++) free(state->blocks[i].ptr);
  free(state);
}

static void state_key_create(void) { pthread_key_create(&state_key, state_release); }

/* The calling thread's state, or NULL when it has none (and `make` is 0, or memory is
 * out). */
static thread_state *thread_state_of(int make) {
  pthread_once(&state_key_once, state_key_create);
  thread_state *state = pthread_getspecific(state_key);
  if (!state && make && (state = calloc(1, sizeof *state)) != NULL)
    pthread_setspecific(state_key, state);
  return state;
}

static int32_t threads_of_running_instance(void) {
  thread_state *state = thread_state_of(0);
  return state ? state->running_threads : 0;
}

/* ------------------------------------------------------------------ the kernels' workspace */

/* A kernel's scratch buffers too big for its stack: the kernels' calls of aligned_alloc
 * and free come here instead (export_library.py renames them). Each thread keeps the
 * buffers it freed, WORKSPACE_BLOCKS at most, and hands them out again, smallest
 * fitting first (TVM's workspace pool): a kernel allocates and frees its buffers in
 * nested order on one thread, so once a thread has run the model its runs allocate
 * nothing. */
__attribute__((visibility("hidden"))) void *autosched_workspace_alloc(size_t align,
                                                                      size_t nbytes) {
  thread_state *state = thread_state_of(1);
  if (!state) return aligned_alloc(align, nbytes);
  workspace_block *fits = NULL, *spare = NULL;
  for (int i = 0; i < WORKSPACE_BLOCKS; i++) {
    workspace_block *b = &state->blocks[i];
    if (b->used) continue;
    if (b->ptr && b->size >= nbytes) {
      if (!fits || b->size < fits->size) fits = b;
    } else if (!spare || (spare->ptr && (!b->ptr || b->size > spare->size))) {
      spare = b;  /* an empty slot, else the largest block that is too small */
    }
  }
  if (!fits && spare) {
    free(spare->ptr);
    spare->ptr = aligned_alloc(align, nbytes);
    spare->size = spare->ptr ? nbytes : 0;
    fits = spare->ptr ? spare : NULL;
  }
  if (!fits) return aligned_alloc(align, nbytes);  /* every slot in use: not kept */
  fits->used = 1;
  return fits->ptr;
}

__attribute__((visibility("hidden"))) void autosched_workspace_free(void *ptr) {
  thread_state *state = thread_state_of(0);
  for (int i = 0; state && i < WORKSPACE_BLOCKS; i++)
    if (state->blocks[i].used && state->blocks[i].ptr == ptr) {
      state->blocks[i].used = 0;
      return;
    }
  free(ptr);
}

/* ------------------------------------------------------------------ the CPU check */

#if defined(__x86_64__) || defined(__i386__)
static uint64_t os_vector_state(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;  /* OSXSAVE */
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((uint64_t)hi << 32) | lo;
}

static int cpu_has(const cpu_feature *f, uint64_t xcr0) {
  unsigned r[4];
  if (!__get_cpuid_count(f->leaf, f->subleaf, &r[0], &r[1], &r[2], &r[3])) return 0;
  return ((r[f->reg] >> f->bit) & 1u) && (xcr0 & f->xcr0) == f->xcr0;
}

/* The names of the features the code needs and this CPU (or its OS) lacks, in `out`;
 * 0 when there is none. */
static int missing_features(char *out, size_t size) {
  uint64_t xcr0 = os_vector_state();
  size_t used = 0;
  int missing = 0;
  out[0] = 0;
  for (int i = 0; i < NUM_FEATURES; i++) {
    if (cpu_has(&model_features[i], xcr0)) continue;
    int n = snprintf(out + used, size - used, "%s%s", missing ? ", " : "",
                     model_features[i].name);
    if (n > 0 && (size_t)n < size - used) used += (size_t)n;
    missing++;
  }
  return missing;
}
#else
static int missing_features(char *out, size_t size) {
  (void)size;
  out[0] = 0;
  return 0;
}
#endif

/* ------------------------------------------------------------------ instances */

static void *aligned_bytes(size_t nbytes) {
  size_t rounded = (nbytes + ALIGN - 1) / ALIGN * ALIGN;
  return aligned_alloc(ALIGN, rounded ? rounded : ALIGN);
}

int autosched_create(autosched_model **model) {
  if (!model) return fail(NULL, AUTOSCHED_ERROR_NULL, "autosched_create: model is NULL");
  *model = NULL;
  char missing[ERROR_BYTES / 2];
  if (missing_features(missing, sizeof missing))
    return fail(NULL, AUTOSCHED_ERROR_CPU,
                "this CPU lacks %s, which the model library was built for (target %s); "
                "build it for this CPU (--target llvm) or for fewer features "
                "(e.g. --target 'llvm -mcpu=x86-64-v3')", missing, model_target);
  autosched_model *m = calloc(1, sizeof *m);
  int64_t *slots = calloc(NUM_SLOTS > 0 ? NUM_SLOTS : 1, sizeof(int64_t));
  if (!m || !slots) {
    free(m);
    free(slots);
    return fail(NULL, AUTOSCHED_ERROR_MEMORY, "autosched_create: out of memory");
  }
  m->slots = slots;
  int ok = 1;
  for (int i = 0; i < NUM_INPUTS; i++) {
    m->inputs[i] = aligned_bytes(model_inputs[i].nbytes);
    ok = ok && m->inputs[i];
    slots[model_inputs[i].slot] = (int64_t)(intptr_t)m->inputs[i];
  }
  for (int i = 0; i < NUM_STORAGE; i++) {
    m->storage[i] = aligned_bytes((size_t)model_storage[i]);
    ok = ok && m->storage[i];
  }
  if (!ok) {
    autosched_destroy(m);
    return fail(NULL, AUTOSCHED_ERROR_MEMORY, "autosched_create: out of memory");
  }
  for (int i = 0; i < NUM_VALUES; i++)
    slots[model_values[i].slot] = (int64_t)(intptr_t)m->storage[model_values[i].storage];
  for (int i = 0; i < NUM_CONSTANTS; i++)
    slots[model_constants[i].slot] =
        (int64_t)(intptr_t)(autosched_weights + model_constants[i].offset);
  for (int i = 0; i < NUM_EXTERNALS; i++)
    slots[model_externals[i].slot] = (int64_t)(intptr_t)model_externals[i].fn;
  autosched_threads_hook = threads_of_running_instance;
  *model = m;
  return AUTOSCHED_OK;
}

void autosched_destroy(autosched_model *model) {
  if (!model) return;
  for (int i = 0; i < NUM_INPUTS; i++) free(model->inputs[i]);
  for (int i = 0; i < NUM_STORAGE; i++) free(model->storage[i]);
  free(model->slots);
  free(model);
}

const char *autosched_last_error(const autosched_model *model) {
  return model ? model->error : create_error;
}

/* ------------------------------------------------------------------ the model's values */

int autosched_num_inputs(void) { return NUM_INPUTS; }
int autosched_num_outputs(void) { return NUM_OUTPUTS; }
const char *autosched_target(void) { return model_target; }

static const tensor_info *input_at(int i) {
  return i >= 0 && i < NUM_INPUTS ? &model_inputs[i] : NULL;
}
static const tensor_info *output_at(int i) {
  return i >= 0 && i < NUM_OUTPUTS ? &model_outputs[i] : NULL;
}

#define INFO(kind, field, type, none)                                   \
  type autosched_##kind##_##field(int index) {                          \
    const tensor_info *t = kind##_at(index);                            \
    return t ? (type)t->field : none;                                   \
  }
INFO(input, name, const char *, NULL)
INFO(output, name, const char *, NULL)
INFO(input, dtype, const char *, NULL)
INFO(output, dtype, const char *, NULL)
INFO(input, ndim, int, -1)
INFO(output, ndim, int, -1)
INFO(input, shape, const int64_t *, NULL)
INFO(output, shape, const int64_t *, NULL)

size_t autosched_input_bytes(int index) {
  const tensor_info *t = input_at(index);
  return t ? t->nbytes : 0;
}
size_t autosched_output_bytes(int index) {
  const tensor_info *t = output_at(index);
  return t ? t->nbytes : 0;
}

int autosched_input_index(const char *name) {
  for (int i = 0; name && i < NUM_INPUTS; i++)
    if (strcmp(model_inputs[i].name, name) == 0) return i;
  return -1;
}
int autosched_output_index(const char *name) {
  for (int i = 0; name && i < NUM_OUTPUTS; i++)
    if (strcmp(model_outputs[i].name, name) == 0) return i;
  return -1;
}

/* The names of the inputs, for messages. */
static void input_names(char *out, size_t size) {
  size_t used = 0;
  out[0] = 0;
  for (int i = 0; i < NUM_INPUTS; i++) {
    int n = snprintf(out + used, size - used, "%s%s", i ? ", " : "", model_inputs[i].name);
    if (n > 0 && (size_t)n < size - used) used += (size_t)n;
  }
}

/* ------------------------------------------------------------------ inputs, run, outputs */

static int check_input(autosched_model *m, const char *what, int index, const void *data,
                       size_t nbytes) {
  const tensor_info *t = input_at(index);
  if (!t)
    return fail(m, AUTOSCHED_ERROR_INDEX, "%s: input index %d out of range (the model has "
                "%d inputs)", what, index, NUM_INPUTS);
  if (!data) return fail(m, AUTOSCHED_ERROR_NULL, "%s: data of input %s is NULL", what, t->name);
  if (nbytes != t->nbytes)
    return fail(m, AUTOSCHED_ERROR_SIZE, "%s: input %s takes %zu bytes (%s), got %zu", what,
                t->name, t->nbytes, t->dtype, nbytes);
  return AUTOSCHED_OK;
}

int autosched_set_input(autosched_model *model, int index, const void *data, size_t nbytes) {
  if (!model) return NULL_MODEL();
  int rc = check_input(model, "autosched_set_input", index, data, nbytes);
  if (rc) return rc;
  memcpy(model->inputs[index], data, nbytes);
  model->slots[model_inputs[index].slot] = (int64_t)(intptr_t)model->inputs[index];
  model->input_set[index] = 1;
  return AUTOSCHED_OK;
}

int autosched_set_input_by_name(autosched_model *model, const char *name, const void *data,
                                size_t nbytes) {
  if (!model) return NULL_MODEL();
  if (!name) return fail(model, AUTOSCHED_ERROR_NULL, "autosched_set_input_by_name: name is NULL");
  int index = autosched_input_index(name);
  if (index < 0) {
    char names[ERROR_BYTES / 2];
    input_names(names, sizeof names);
    return fail(model, AUTOSCHED_ERROR_NAME, "autosched_set_input_by_name: no input named "
                "'%.100s'; the inputs are %s", name, names);
  }
  return autosched_set_input(model, index, data, nbytes);
}

int autosched_bind_input(autosched_model *model, int index, const void *data, size_t nbytes) {
  if (!model) return NULL_MODEL();
  int rc = check_input(model, "autosched_bind_input", index, data, nbytes);
  if (rc) return rc;
  if ((uintptr_t)data % model_inputs[index].itemsize)
    return fail(model, AUTOSCHED_ERROR_ARGUMENT, "autosched_bind_input: data of input %s is "
                "not aligned to its %zu-byte elements", model_inputs[index].name,
                model_inputs[index].itemsize);
  model->slots[model_inputs[index].slot] = (int64_t)(intptr_t)data;
  model->input_set[index] = 1;
  return AUTOSCHED_OK;
}

int autosched_run(autosched_model *model) {
  if (!model) return NULL_MODEL();
  for (int i = 0; i < NUM_INPUTS; i++)
    if (!model->input_set[i])
      return fail(model, AUTOSCHED_ERROR_NOT_SET, "autosched_run: input %s has no value "
                  "(autosched_set_input)", model_inputs[i].name);
  thread_state *state = thread_state_of(1);
  if (!state) return fail(model, AUTOSCHED_ERROR_MEMORY, "autosched_run: out of memory");
  int outer = state->running_threads;  /* a run inside a kernel keeps its caller's count */
  state->running_threads = model->num_threads;
  int32_t rc = graph_run(model->slots);
  state->running_threads = outer;
  if (rc != 0)
    return fail(model, AUTOSCHED_ERROR_KERNEL, "autosched_run: a kernel failed with code %d%s",
                (int)rc, rc == -1 ? " (out of memory)" : "");
  model->ran = 1;
  return AUTOSCHED_OK;
}

const void *autosched_output_data(autosched_model *model, int index) {
  if (!model) return NULL_MODEL(), NULL;
  const tensor_info *t = output_at(index);
  if (!t) {
    fail(model, AUTOSCHED_ERROR_INDEX, "output index %d out of range (the model has %d "
         "outputs)", index, NUM_OUTPUTS);
    return NULL;
  }
  if (!model->ran) {
    fail(model, AUTOSCHED_ERROR_NOT_SET, "output %s: the instance has not run yet", t->name);
    return NULL;
  }
  return (const void *)(intptr_t)model->slots[t->slot];
}

int autosched_get_output(autosched_model *model, int index, void *data, size_t nbytes) {
  if (!model) return NULL_MODEL();
  const void *value = autosched_output_data(model, index);
  if (!value) return output_at(index) ? AUTOSCHED_ERROR_NOT_SET : AUTOSCHED_ERROR_INDEX;
  const tensor_info *t = output_at(index);
  if (!data)
    return fail(model, AUTOSCHED_ERROR_NULL, "autosched_get_output: data for output %s is "
                "NULL", t->name);
  if (nbytes != t->nbytes)
    return fail(model, AUTOSCHED_ERROR_SIZE, "autosched_get_output: output %s has %zu bytes "
                "(%s), got room for %zu", t->name, t->nbytes, t->dtype, nbytes);
  memcpy(data, value, nbytes);
  return AUTOSCHED_OK;
}

int autosched_set_num_threads(autosched_model *model, int num_threads) {
  if (!model) return NULL_MODEL();
  if (num_threads < 0 || num_threads > 256)
    return fail(model, AUTOSCHED_ERROR_ARGUMENT, "autosched_set_num_threads: %d threads; "
                "give 1 to 256, or 0 for the count the model was built for", num_threads);
  model->num_threads = num_threads;
  return AUTOSCHED_OK;
}
