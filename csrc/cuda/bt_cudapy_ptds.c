/* bt_cudapy_ptds.c - a thread's per-thread-stream work finished before the
 * thread is gone.
 *
 * Work a thread leaves on its per-thread stream (cuda.PER_THREAD, handle 2)
 * when it exits never runs, and whatever waits for it waits forever: an
 * event recorded there, cuMemFree and cuCtxSynchronize (which wait for the
 * whole device). So the first time a thread names the per-thread stream,
 * bindthem puts a sentinel in its thread state's dict; CPython clears that
 * dict in the exiting thread (PyThreadState_Clear, the GIL held), and the
 * sentinel's release waits, with the GIL released, for the thread's
 * per-thread streams (bt_cuda_ptds_drain). */
#include "bt_cudapy.h"

#define SENTINEL "bindthem.cuda.per_thread_stream"

/* Whether this thread's dict holds the sentinel (a new thread starts at 0). */
static _Thread_local int armed;

static void drain(PyObject *capsule)
{
    (void)capsule;
    Py_BEGIN_ALLOW_THREADS
    bt_cuda_ptds_drain();
    Py_END_ALLOW_THREADS
}

int bt_cudapy_ptds_arm(void)
{
    PyObject *dict, *key, *sentinel;
    int rc = -1;

    if (armed)
        return 0;
    dict = PyThreadState_GetDict(); /* borrowed; NULL (no error) without a thread state */
    if (!dict)
        return 0;
    /* keyed by an int (drain's address), not a str: threads arming at once
     * would intern one str key at once, which 3.13t's interning races on */
    key = PyLong_FromVoidPtr((void *)(uintptr_t)drain);
    sentinel = key ? PyCapsule_New(&armed, SENTINEL, drain) : NULL;
    if (sentinel)
        rc = PyDict_SetItem(dict, key, sentinel);
    Py_XDECREF(sentinel);
    Py_XDECREF(key);
    if (rc < 0)
        return -1;
    armed = 1;
    return 0;
}
