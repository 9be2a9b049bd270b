// Free helpers shared by the engine's source files (engine.cc and
// engine_*.cc): pending-reason construction and text, and workload lookup
// by key or handle. Internal header: only those files include it; it is not
// part of the engine's API.
//
// Thread-safety: none; the helpers read the EngineImpl they are given.
#pragma once

#include <string>

#include "core/engine_impl.h"

namespace artel::core {

// A pending reason of `kind` with `message` (engine_queues.cc).
PendingReason Reason(PendingReason::Kind kind, std::string message);

// The workload with `key`, or NotFound (engine.cc).
Result<WlId> Lookup(const EngineImpl& e, const std::string& key);
// Whether handle `id` names a workload that has not been forgotten.
bool Live(const EngineImpl& e, WlId id);
// NotFound for handle `id`.
Status UnknownId(WlId id);

// Message text (engine_explain.cc).
// A span of milliseconds as "1h2m3s" (whole seconds; "0s" below one).
std::string FormatSpan(Time ms);
void AppendSpan(std::string* out, Time ms);  // FormatSpan's text, appended
// What a reserving workload's message says of its reservation.
std::string ReservationText(const EngineImpl& e, const EngineImpl::Reservation& res);
// Why a workload that qualifies has no reservation (beyond the backfill window), or "".
std::string BeyondWindowText(const EngineImpl& e, const Wl& w);
// Fills r->message from its kind and fields, unless it already has one.
void FillMessage(const EngineImpl& e, const Wl& w, PendingReason* r);
// The message of a workload behind its StrictFIFO queue's head.
std::string StrictFifoMessage(const EngineImpl& e, const Wl& w);
// The pending reason of a workload the cycle found inadmissible with
// assignment `a` in ClusterQueue `cq_name`: only the kind is set (names and
// the message are built on read), except for no-flavor and infeasible
// reasons, whose message is the assignment's own.
void SetInadmissibleReason(Wl& w, const Assignment& a, const std::string& cq_name);

}  // namespace artel::core
