// tunectl: command-line client of the tuned daemon (client/tunectl.h).
#include "client/tunectl.h"

int main(int argc, char** argv) { return tuned::RunTunectl(argc, argv); }
