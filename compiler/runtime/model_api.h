/* The C API of a model library written by `autosched compile --format shared` (and
 * GraphExecutor.export_library): the same functions for every model. A model's own
 * header (`--format header`) is this text after a comment that lists its inputs and
 * outputs.
 *
 * An instance (autosched_create) holds all the storage a run needs, allocated once;
 * the weights are in the library and shared. One instance runs on one thread at a
 * time; instances run concurrently on different threads. Every function that can fail
 * returns an error code (0 is success) and leaves a message that
 * autosched_last_error(instance) returns; no call on a valid instance crashes on bad
 * arguments.
 *
 * Every symbol but these is hidden, so two model libraries in one process never bind
 * to each other's kernels or thread pools. All libraries export the same names, so a
 * program that uses two models opens them with dlopen and looks the functions up with
 * dlsym in each. The library is linked with -z nodelete: dlclose returns but the
 * library stays loaded (its worker threads run its code), and opening it again gives
 * the same library and the same weights.
 */
#ifndef AUTOSCHED_MODEL_API_H
#define AUTOSCHED_MODEL_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define AUTOSCHED_ABI_VERSION 1

enum {
  AUTOSCHED_OK = 0,
  AUTOSCHED_ERROR_NULL = 1,     /* a null pointer where one is needed */
  AUTOSCHED_ERROR_NAME = 2,     /* no input or output of that name */
  AUTOSCHED_ERROR_INDEX = 3,    /* an index out of range */
  AUTOSCHED_ERROR_SIZE = 4,     /* a byte count that is not the value's */
  AUTOSCHED_ERROR_NOT_SET = 5,  /* a run before every input has a value; an output
                                   read before a run */
  AUTOSCHED_ERROR_MEMORY = 6,   /* out of memory */
  AUTOSCHED_ERROR_CPU = 7,      /* this CPU lacks features the library was built for */
  AUTOSCHED_ERROR_KERNEL = 8,   /* a kernel failed while running */
  AUTOSCHED_ERROR_ARGUMENT = 9  /* another bad argument (a thread count, an alignment) */
};

typedef struct autosched_model autosched_model;

/* A new instance in *model. On failure *model is NULL and autosched_last_error(NULL)
 * says why (AUTOSCHED_ERROR_CPU names the missing CPU features). */
int autosched_create(autosched_model **model);
void autosched_destroy(autosched_model *model);  /* NULL is allowed */

/* The message of the instance's last failure ("" if none); with NULL, of the last failed
 * autosched_create or call on a NULL instance (one message for the process). Valid until
 * the next call on the instance. */
const char *autosched_last_error(const autosched_model *model);

/* The model: its inputs and outputs, in order. Names, dtypes ("float32", "int64", ...)
 * and shapes are static; an index out of range gives NULL or -1. */
int autosched_num_inputs(void);
int autosched_num_outputs(void);
const char *autosched_input_name(int index);
const char *autosched_output_name(int index);
int autosched_input_index(const char *name);   /* -1 if there is none */
int autosched_output_index(const char *name);  /* -1 if there is none */
const char *autosched_input_dtype(int index);
const char *autosched_output_dtype(int index);
int autosched_input_ndim(int index);
int autosched_output_ndim(int index);
const int64_t *autosched_input_shape(int index);   /* ndim sizes */
const int64_t *autosched_output_shape(int index);
size_t autosched_input_bytes(int index);   /* 0 if out of range */
size_t autosched_output_bytes(int index);
const char *autosched_target(void);  /* the target it was built for, as autosched writes it */

/* An input's value, copied from `data` (nbytes must be its size in bytes). */
int autosched_set_input(autosched_model *model, int index, const void *data, size_t nbytes);
int autosched_set_input_by_name(autosched_model *model, const char *name, const void *data,
                                size_t nbytes);
/* An input used in place: the caller keeps `data` alive and unchanged until the instance
 * is destroyed or the input set again; aligned to its element size. */
int autosched_bind_input(autosched_model *model, int index, const void *data, size_t nbytes);

/* Run the model on the inputs set. */
int autosched_run(autosched_model *model);

/* An output of the last run, copied into `data` (nbytes its size in bytes), or a pointer
 * to it inside the instance (valid until the next run; NULL on error). */
int autosched_get_output(autosched_model *model, int index, void *data, size_t nbytes);
const void *autosched_output_data(autosched_model *model, int index);

/* The threads this instance's runs use; 0 gives back the count it was built for. */
int autosched_set_num_threads(autosched_model *model, int num_threads);

#ifdef __cplusplus
}
#endif

#endif
