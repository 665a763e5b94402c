// The one place where families are registered.
#include "families/family.h"

namespace tuned {

namespace {
bool fault_test_enabled = false;
}  // namespace

void EnableFaultTestFamily() { fault_test_enabled = true; }

std::vector<const Family*> AllFamilies() {
  std::vector<const Family*> all = {&SgemmFamily(), &TransposeFamily()};
  if (fault_test_enabled) all.push_back(&FaultTestFamily());
  return all;
}

const Family* FindFamily(v1::Family id) {
  for (const Family* f : AllFamilies()) {
    if (f->id() == id) return f;
  }
  return nullptr;
}

const Family* FindFamily(std::string_view name) {
  for (const Family* f : AllFamilies()) {
    if (f->name() == name) return f;
  }
  return nullptr;
}

}  // namespace tuned
