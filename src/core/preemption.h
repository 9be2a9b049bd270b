// Classical preemption (Kueue's pkg/scheduler/preemption), declared in
// core/engine_impl.h as `GetTargets`.
//
// Given a workload W that does not fit in ClusterQueue C:
//  1. Resources needing preemption: the flavor-resources where W's request
//     exceeds what the tree makes available to C. Candidates must use one.
//  2. Same-queue candidates per withinClusterQueue (InClusterQueue).
//  3. When reclaimWithinCohort != Never, other queues are collected level by
//     level up C's path: at each ancestor cohort, the sibling subtrees (and
//     their queues) that exceed their quota. W has a hierarchical advantage
//     over them once its request fits the quota of C or of a cohort below
//     that level; such candidates are taken regardless of borrowing
//     (InCohortReclamation). Without the advantage a candidate may be taken
//     only if C ends up not borrowing, unless borrowWithinCohort allows it
//     for lower priorities at or below maxPriorityThreshold
//     (InCohortReclaimWhileBorrowing).
//  4. Order: evicting candidates first; groups hierarchical, priority-based,
//     same-queue; within a group other queues first, (Admission Fair
//     Sharing: higher LocalQueue usage), lower priority, most recently
//     admitted, uid.
//  5. Attempts: borrowing only, or without-then-with, or with-then-without
//     borrowing, depending on the policy and the candidates (see
//     docs/semantics.md section 5).
//  6. Minimal set: remove valid candidates in order until W fits (a
//     cross-queue candidate is valid only while its queue and every cohort
//     below the common ancestor still exceed their quota); then fill back
//     from the second-to-last victim backwards, keeping out only those still
//     needed.
// With fair sharing on, `FairSharingTargets` (core/fair_sharing.cc) is used
// instead. The tree is restored before returning.
#pragma once
#include "core/engine_impl.h"
