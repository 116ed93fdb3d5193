------------------------------ MODULE Failover ------------------------------
(***************************************************************************)
(* A Redis primary with one asynchronously replicated replica.  A lock    *)
(* acquire is one atomic script on the primary:                           *)
(*     SET lock <token> NX   and   INCR fence                             *)
(* and a release is DEL-if-token on the primary.  Every write on the      *)
(* primary appends the resulting key space to the replication stream      *)
(* `log`; the replica has applied the prefix log[1..applied] (Redis       *)
(* replication is ordered, so a replica is always a prefix of its         *)
(* primary).  The primary may crash; the replica is then promoted        *)
(* (manually or by Sentinel) and keeps only what it had applied: the      *)
(* stream is cut back to log[1..applied].  There is at most one failover  *)
(* and no replica after it (the old primary does not come back).         *)
(*                                                                         *)
(* Leases are long enough not to expire within the model, so there is no *)
(* clock: the only way to lose the key is the failover.                   *)
(*                                                                         *)
(* Sync = TRUE models a client that, after a successful SET, calls        *)
(* WAIT 1 and believes it holds the lock only once the replica has        *)
(* acknowledged the write; if the primary dies first, the acquire fails.  *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Clients,      \* the clients (model values)
    None,         \* a model value: "nobody"
    MaxAcquires,  \* at most this many acquires executed on a primary
    Sync,         \* TRUE: WAIT for the replica before believing
    Crash         \* TRUE: the primary may crash and the replica be promoted

ASSUME /\ Sync \in BOOLEAN /\ Crash \in BOOLEAN /\ MaxAcquires \in Nat
       /\ None \notin Clients

VARIABLES
    log,        \* key spaces after each write on the (current) primary
    applied,    \* the replica has applied log[1..applied]
    crashed,    \* the primary is down and not yet replaced
    failedOver, \* the replica has been promoted
    pc,         \* client program counter: idle | wait | cs
    fence,      \* fence[c]: fence returned by c's acquire, 0 if none
    offset,     \* offset[c]: position of c's acquire in the stream (for WAIT)
    grants,     \* sequence of fences of successful acquires (history)
    event       \* the last step, for reading traces (excluded from the VIEW)

vars == <<log, applied, crashed, failedOver, pc, fence, offset, grants, event>>
View == <<log, applied, crashed, failedOver, pc, fence, offset, grants>>

Empty == [owner |-> None, tok |-> 0, ctr |-> 0]
\* The key space of the current primary and of the replica.
Primary == IF log = <<>> THEN Empty ELSE log[Len(log)]
Replica == IF applied = 0 THEN Empty ELSE log[applied]
PrimaryUp == ~crashed

Holding(c) == pc[c] = "cs"

Init ==
    /\ log = <<>>
    /\ applied = 0
    /\ crashed = FALSE
    /\ failedOver = FALSE
    /\ pc = [c \in Clients |-> "idle"]
    /\ fence = [c \in Clients |-> 0]
    /\ offset = [c \in Clients |-> 0]
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
       /\ IF Sync
            THEN /\ pc' = [pc EXCEPT ![c] = "wait"]
                 /\ UNCHANGED grants
            ELSE /\ pc' = [pc EXCEPT ![c] = "cs"]
                 /\ grants' = Append(grants, f)
       /\ event' = <<"acquire", c, f>>
    /\ UNCHANGED <<applied, crashed, failedOver>>

\* WAIT 1 returns: the replica has applied our write.
AckedByReplica(c) ==
    /\ pc[c] = "wait"
    /\ PrimaryUp /\ ~failedOver
    /\ applied >= offset[c]
    /\ pc' = [pc EXCEPT ![c] = "cs"]
    /\ grants' = Append(grants, fence[c])
    /\ event' = <<"wait-acked", c, fence[c]>>
    /\ UNCHANGED <<log, applied, crashed, failedOver, fence, offset>>

\* The primary died (or was replaced) before WAIT returned: the acquire fails.
WaitFails(c) ==
    /\ pc[c] = "wait"
    /\ crashed \/ failedOver
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ fence' = [fence EXCEPT ![c] = 0]
    /\ offset' = [offset EXCEPT ![c] = 0]
    /\ event' = <<"wait-failed", c>>
    /\ UNCHANGED <<log, applied, crashed, failedOver, grants>>

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
    /\ UNCHANGED <<applied, crashed, failedOver, grants>>

Replicate ==
    /\ PrimaryUp /\ ~failedOver
    /\ applied < Len(log)
    /\ applied' = applied + 1
    /\ event' = <<"replicate", log[applied + 1]>>
    /\ UNCHANGED <<log, crashed, failedOver, pc, fence, offset, grants>>

CrashPrimary ==
    /\ Crash
    /\ ~crashed /\ ~failedOver
    /\ crashed' = TRUE
    /\ event' = <<"crash-primary", Len(log) - applied>>
    /\ UNCHANGED <<log, applied, failedOver, pc, fence, offset, grants>>

\* The replica becomes the primary with what it had applied.
Promote ==
    /\ crashed
    /\ crashed' = FALSE
    /\ failedOver' = TRUE
    /\ log' = SubSeq(log, 1, applied)
    /\ event' = <<"promote-replica", Replica>>
    /\ UNCHANGED <<applied, pc, fence, offset, grants>>

Next ==
    \/ Replicate
    \/ CrashPrimary
    \/ Promote
    \/ \E c \in Clients :
          \/ Acquire(c)
          \/ AckedByReplica(c)
          \/ WaitFails(c)
          \/ Release(c)

Spec == Init /\ [][Next]_vars

\* The clients are interchangeable (configs may declare SYMMETRY Symmetry).
Symmetry == Permutations(Clients)

-----------------------------------------------------------------------------
TypeOK ==
    /\ pc \in [Clients -> {"idle", "wait", "cs"}]
    /\ applied \in 0..Len(log)

(* P1: no two clients believe they hold the lock at the same time. *)
MutualExclusion ==
    \A c, d \in Clients : c /= d => ~(Holding(c) /\ Holding(d))

(* P3: fences granted by successful acquires grow strictly in real-time order. *)
FenceMonotonic ==
    \A i, j \in 1..Len(grants) : i < j => grants[i] < grants[j]
=============================================================================
