// Placeholder until the PostgreSQL backend lands.
#include "db/database.h"
namespace tuned {
absl::StatusOr<std::unique_ptr<Database>> OpenPostgres(const std::string&) {
  return absl::UnimplementedError("postgresql: not built yet");
}
}  // namespace tuned
