// Decoding one GGUF metadata value at a cursor, every length and count bounds-checked.
// An array is checked whole (element types, lengths, nesting) but returned as a view of its
// encoded bytes (GGUFValue::encoded_array), so its size in memory does not depend on its length.
#pragma once
#include "gguf/gguf_cursor.h"
#include "gguf/gguf_value.h"

namespace minfer {

// `depth`: how many arrays enclose the value (0 for a metadata value).
GGUFValue gguf_read_value(GGUFCursor& c, GGUFValueType type, int depth);

}  // namespace minfer
