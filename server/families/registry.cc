// The one place where families are registered.
#include "server/families/family.h"

namespace tuned {

std::vector<const Family*> AllFamilies() { return {&SgemmFamily(), &TransposeFamily()}; }

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
