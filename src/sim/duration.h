// Durations in scenario files: `0s`, `90s`, `5m`, `1h30m`, `250ms`.
//
// A duration is one or more `<integer><unit>` parts with units `h`, `m`, `s`
// and `ms`, each unit at most once and from the largest to the smallest, so
// that `1h30m` reads one way only. A bare `0` is accepted; any other bare
// number is an error because a missing unit is almost always a mistake
// (seconds or minutes?). Values are `core::Time` milliseconds.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "core/model.h"
#include "core/status.h"

namespace artel::sim {

// Parses a duration into milliseconds. The error message says what was
// expected; the caller adds the field and position.
Result<core::Time> ParseDuration(std::string_view text);

// The shortest form that `ParseDuration` reads back to `ms`: 0 -> "0s",
// 5400000 -> "1h30m", 250 -> "250ms". Negative values get a leading '-'.
std::string FormatDuration(core::Time ms);

}  // namespace artel::sim
