#pragma once

namespace kiln {

// Registers every op of the catalogue in OpRegistry::global(). Idempotent. Called
// explicitly at start-up (not from static initializers, which a linker may drop).
void register_all_ops();

}  // namespace kiln
