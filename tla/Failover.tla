------------------------------ MODULE Failover ------------------------------
(***************************************************************************)
(* A Redis primary with asynchronously replicated replicas.  A lock       *)
(* acquire is one atomic script on the primary:                           *)
(*     SET lock <token> NX   and   INCR fence                             *)
(* and a release is DEL-if-token on the primary.  Every write on the      *)
(* primary appends the resulting key space to the replication stream      *)
(* `log`; replica r has applied the prefix log[1..applied[r]] (Redis      *)
(* replication is ordered, so a replica is always a prefix of its         *)
(* primary).  The primary may crash; a replica is then promoted           *)
(* (manually or by Sentinel) and keeps only what it had applied: the      *)
(* stream is cut back to its prefix.  There is at most one failover; the  *)
(* other replicas then replicate from the new primary (the old primary    *)
(* does not come back).                                                   *)
(*                                                                         *)
(* Leases are long enough not to expire within the model, so there is no *)
(* clock: the only way to lose the key is the failover.                   *)
(*                                                                         *)
(* WaitFor = n > 0 models a client that, after a successful SET, calls    *)
(* WAIT n and believes it holds the lock only once n replicas have        *)
(* acknowledged the write; if the primary dies first, the acquire fails.  *)
(* Promote says which replica a failover may promote: "any" (Sentinel     *)
(* picks by replica-priority before the replication offset, so a         *)
(* preferred replica may lag) or "freshest" (one that applied the most).  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Clients,      \* the clients (model values)
    Replicas,     \* the primary's replicas (model values)
    None,         \* a model value: "nobody"
    MaxAcquires,  \* at most this many acquires executed on a primary
    WaitFor,      \* WAIT for this many replicas before believing; 0: no WAIT
    Promote,      \* "any" or "freshest": the replicas a failover may promote
    Crash         \* TRUE: the primary may crash and a replica be promoted

ASSUME /\ Crash \in BOOLEAN /\ MaxAcquires \in Nat
       /\ WaitFor \in 0..Cardinality(Replicas)
       /\ Promote \in {"any", "freshest"}
       /\ None \notin Clients \cup Replicas /\ Replicas # {}

VARIABLES
    log,        \* key spaces after each write on the (current) primary
    applied,    \* applied[r]: replica r has applied log[1..applied[r]]
    crashed,    \* the primary is down and not yet replaced
    promoted,   \* the replica promoted by the failover, None before it
    pc,         \* client program counter: idle | wait | cs
    fence,      \* fence[c]: fence returned by c's acquire, 0 if none
    offset,     \* offset[c]: position of c's acquire in the stream (for WAIT)
    wrote,      \* wrote[c]: the primary c's acquire wrote on: None (the first) or the promoted replica
    grants,     \* sequence of fences of successful acquires (history)
    event       \* the last step, for reading traces (excluded from the VIEW)

vars == <<log, applied, crashed, promoted, pc, fence, offset, wrote, grants, event>>
View == <<log, applied, crashed, promoted, pc, fence, offset, wrote, grants>>

Empty == [owner |-> None, tok |-> 0, ctr |-> 0]
\* The key space of the current primary and of replica r.
Primary == IF log = <<>> THEN Empty ELSE log[Len(log)]
ReplicaSpace(r) == IF applied[r] = 0 THEN Empty ELSE log[applied[r]]
PrimaryUp == ~crashed
FailedOver == promoted /= None
\* The replicas of the current primary.
Following == Replicas \ {promoted}

Holding(c) == pc[c] = "cs"

Init ==
    /\ log = <<>>
    /\ applied = [r \in Replicas |-> 0]
    /\ crashed = FALSE
    /\ promoted = None
    /\ pc = [c \in Clients |-> "idle"]
    /\ fence = [c \in Clients |-> 0]
    /\ offset = [c \in Clients |-> 0]
    /\ wrote = [c \in Clients |-> None]
    /\ grants = <<>>
    /\ event = <<"init">>

\* Number of acquires the primary has executed (bounds the model).
Acquires == Cardinality({i \in 1..Len(log) : log[i].owner /= None})

Acquire(c) ==
    /\ pc[c] = "idle"
    /\ PrimaryUp
    /\ Primary.owner = None
    /\ Acquires < MaxAcquires
    /\ LET f == Primary.ctr + 1 IN
       /\ log' = Append(log, [owner |-> c, tok |-> f, ctr |-> f])
       /\ fence' = [fence EXCEPT ![c] = f]
       /\ offset' = [offset EXCEPT ![c] = Len(log) + 1]
       /\ wrote' = [wrote EXCEPT ![c] = promoted]
       /\ IF WaitFor > 0
            THEN /\ pc' = [pc EXCEPT ![c] = "wait"]
                 /\ UNCHANGED grants
            ELSE /\ pc' = [pc EXCEPT ![c] = "cs"]
                 /\ grants' = Append(grants, f)
       /\ event' = <<"acquire", c, f>>
    /\ UNCHANGED <<applied, crashed, promoted>>

\* The replicas of the current primary that have applied c's write.
Acked(c) == {r \in Following : applied[r] >= offset[c]}

\* WAIT returns with enough acknowledgements: c believes.
AckedByReplicas(c) ==
    /\ pc[c] = "wait"
    /\ PrimaryUp /\ wrote[c] = promoted
    /\ Cardinality(Acked(c)) >= WaitFor
    /\ pc' = [pc EXCEPT ![c] = "cs"]
    /\ grants' = Append(grants, fence[c])
    /\ event' = <<"wait-acked", c, fence[c], Acked(c)>>
    /\ UNCHANGED <<log, applied, crashed, promoted, fence, offset, wrote>>

\* The primary c wrote on died (or was replaced) before WAIT returned: the
\* acquire fails.
WaitFails(c) ==
    /\ pc[c] = "wait"
    /\ crashed \/ wrote[c] /= promoted
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ fence' = [fence EXCEPT ![c] = 0]
    /\ offset' = [offset EXCEPT ![c] = 0]
    /\ event' = <<"wait-failed", c>>
    /\ UNCHANGED <<log, applied, crashed, promoted, wrote, grants>>

\* The client stops believing when it calls release; the DEL-if-token
\* reaches the primary only if one is up.
Release(c) ==
    /\ pc[c] = "cs"
    /\ log' = IF PrimaryUp /\ Primary.owner = c /\ Primary.tok = fence[c]
                THEN Append(log, [Primary EXCEPT !.owner = None, !.tok = 0])
                ELSE log
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ fence' = [fence EXCEPT ![c] = 0]
    /\ offset' = [offset EXCEPT ![c] = 0]
    /\ event' = <<"release", c, fence[c]>>
    /\ UNCHANGED <<applied, crashed, promoted, wrote, grants>>

Replicate(r) ==
    /\ PrimaryUp /\ r \in Following
    /\ applied[r] < Len(log)
    /\ applied' = [applied EXCEPT ![r] = @ + 1]
    /\ event' = <<"replicate", r, log[applied[r] + 1]>>
    /\ UNCHANGED <<log, crashed, promoted, pc, fence, offset, wrote, grants>>

CrashPrimary ==
    /\ Crash
    /\ ~crashed /\ ~FailedOver
    /\ crashed' = TRUE
    /\ event' = <<"crash-primary", [r \in Replicas |-> Len(log) - applied[r]]>>
    /\ UNCHANGED <<log, applied, promoted, pc, fence, offset, wrote, grants>>

\* Replica r becomes the primary with what it had applied; the others follow
\* it and keep no more than it has (a resync drops what the new primary lacks).
PromoteReplica(r) ==
    /\ crashed
    /\ Promote = "any" \/ \A q \in Replicas : applied[q] <= applied[r]
    /\ crashed' = FALSE
    /\ promoted' = r
    /\ log' = SubSeq(log, 1, applied[r])
    /\ applied' = [q \in Replicas |-> IF applied[q] < applied[r] THEN applied[q] ELSE applied[r]]
    /\ event' = <<"promote-replica", r, ReplicaSpace(r)>>
    /\ UNCHANGED <<pc, fence, offset, wrote, grants>>

Next ==
    \/ CrashPrimary
    \/ \E r \in Replicas : Replicate(r) \/ PromoteReplica(r)
    \/ \E c \in Clients :
          \/ Acquire(c)
          \/ AckedByReplicas(c)
          \/ WaitFails(c)
          \/ Release(c)

Spec == Init /\ [][Next]_vars

\* The clients are interchangeable, and so are the replicas (configs may
\* declare SYMMETRY Symmetry).
Symmetry == Permutations(Clients) \cup Permutations(Replicas)

-----------------------------------------------------------------------------
TypeOK ==
    /\ pc \in [Clients -> {"idle", "wait", "cs"}]
    /\ promoted \in Replicas \cup {None}
    /\ applied \in [Replicas -> 0..Len(log)]

(* P1: no two clients believe they hold the lock at the same time. *)
MutualExclusion ==
    \A c, d \in Clients : c /= d => ~(Holding(c) /\ Holding(d))

(* P3: fences granted by successful acquires grow strictly in real-time order. *)
FenceMonotonic ==
    \A i, j \in 1..Len(grants) : i < j => grants[i] < grants[j]
=============================================================================
