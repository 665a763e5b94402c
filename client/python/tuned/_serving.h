// tuned._torchcall's serving at torch's dispatcher (tuned/_serving.cpp): the
// Python functions it adds to the module. Needs Python.h first.
#ifndef TUNED_SERVING_H_
#define TUNED_SERVING_H_

#include "_fastcall_api.h"

namespace tuned_serving {

// Sets tuned._fastcall's C API (the launches), once, at the module's import.
void SetApi(const FastcallApi* api);

// The module's serving functions, ending with a null entry (documented in
// tuned/_serving.cpp and tuned/serving.py).
extern PyMethodDef kMethods[];

}  // namespace tuned_serving

#endif  // TUNED_SERVING_H_
