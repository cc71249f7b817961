/* A GGUF array of strings read in C: the optional fast path of gguf_file._Reader.strings (a vocabulary and its
 * merges are 50-300k strings, 0.2 s of Python loop in a cold start; here about 10 ms).
 *
 *     strings(buffer, pos, n, keep) -> (list of str or None, end) | None
 *         n strings from byte `pos` of `buffer`, each a little-endian uint64 length and that many bytes of UTF-8;
 *         with `keep` false only walked past. None where any item is cut short, runs past the end or is not UTF-8:
 *         the Python reader then walks the array itself and says which item and why.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

static PyObject *strings(PyObject *self, PyObject *args) {
    Py_buffer buffer;
    Py_ssize_t pos, n;
    int keep;
    if (!PyArg_ParseTuple(args, "y*nnp", &buffer, &pos, &n, &keep)) return NULL;
    const unsigned char *data = buffer.buf;
    const Py_ssize_t size = buffer.len;
    PyObject *out = NULL;
    if (pos < 0 || n < 0 || pos > size) goto fail;
    if (keep && !(out = PyList_New(n))) {
        PyBuffer_Release(&buffer);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (size - pos < 8) goto fail;
        uint64_t length = 0;
        for (int k = 7; k >= 0; k--) length = (length << 8) | data[pos + k];
        pos += 8;
        if (length > (uint64_t)(size - pos)) goto fail;
        if (keep) {
            PyObject *s = PyUnicode_DecodeUTF8((const char *)data + pos, (Py_ssize_t)length, "strict");
            if (!s) {
                PyErr_Clear();
                goto fail;
            }
            PyList_SET_ITEM(out, i, s);
        }
        pos += (Py_ssize_t)length;
    }
    PyBuffer_Release(&buffer);
    return Py_BuildValue("(Nn)", keep ? out : Py_NewRef(Py_None), pos);
fail:
    Py_XDECREF(out);
    PyBuffer_Release(&buffer);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"strings", strings, METH_VARARGS, "strings(buffer, pos, n, keep) -> (list or None, end) | None: a GGUF string array."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_gguf_strings", "A GGUF array of strings read in C.", -1, methods};

PyMODINIT_FUNC PyInit__gguf_strings(void) { return PyModule_Create(&module); }
