------------------------------- MODULE Redlock -------------------------------
(***************************************************************************)
(* Redlock over N independent Redis nodes (no replication).  A client    *)
(* notes its start time t0 on its own clock, sends                        *)
(*     SET lock <token> NX PX <TTL>                                        *)
(* to the nodes one after the other (in the same order 1..N, as clients  *)
(* configured with the same node list do), time may pass between two     *)
(* nodes, and then computes                                               *)
(*     validity = TTL - (now - t0) - Drift                                 *)
(* It holds the lock iff a majority of nodes said OK and validity > 0;    *)
(* otherwise it unlocks every node (DEL-if-token) and goes back to idle. *)
(* A holder is timely: it leaves its critical section (calls release)    *)
(* before its own clock reaches t0 + TTL - Drift; clients do not pause   *)
(* here (pauses are LeaseLock's subject).  Client clocks are exact.      *)
(*                                                                         *)
(* Each node judges expiry on its own clock now + off[n].  Faults, at     *)
(* most MaxFaults of them in a behaviour:                                 *)
(*   - ClockJump > 0: a node's clock jumps forward by ClockJump;          *)
(*   - Restarts: a node crashes and restarts; without persistence          *)
(*     (Persist = FALSE) it comes back with an empty key space; it        *)
(*     restarts no earlier than RestartDelay ticks after the crash        *)
(*     (0 = immediately; antirez's fix is a delay of at least the TTL).   *)
(*                                                                         *)
(* Release and the unlock after a failed attempt are modelled as one     *)
(* step over all nodes: the client's belief ends at the call, and the    *)
(* DELs only remove this client's own keys, so spreading them out in     *)
(* time could only make other clients' attempts fail more often.         *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Clients,      \* the clients (model values)
    None,         \* a model value: "nobody"
    N,            \* number of Redis nodes
    TTL,          \* lease length in ticks
    Drift,        \* validity margin the client subtracts (clock drift allowance)
    MaxTime,      \* the global clock stops here
    MaxFaults,    \* at most this many clock jumps + crashes in a behaviour
    ClockJump,    \* 0: no clock jumps; k > 0: a node clock may jump forward k
    Restarts,     \* TRUE: nodes may crash and restart
    Persist,      \* TRUE: a restarted node keeps its keys (AOF fsync always)
    RestartDelay  \* a crashed node stays down at least this many ticks

ASSUME /\ N \in Nat \ {0} /\ TTL \in Nat \ {0} /\ Drift \in Nat /\ Drift < TTL
       /\ MaxTime \in Nat /\ MaxFaults \in Nat /\ ClockJump \in Nat
       /\ Restarts \in BOOLEAN /\ Persist \in BOOLEAN /\ RestartDelay \in Nat
       /\ None \notin Clients

Nodes == 1..N
Quorum == N \div 2 + 1

VARIABLES
    now,        \* global time = every client's clock
    key,        \* key[n]: [owner, exp] on node n; exp is on n's clock
    off,        \* off[n]: offset of node n's clock
    up,         \* up[n]: node n is running
    downAt,     \* downAt[n]: when node n crashed
    faults,     \* faults injected so far
    pc,         \* client program counter: idle | acq | cs
    next,       \* next[c]: the node c contacts next during an attempt
    got,        \* got[c]: nodes that granted c's current attempt
    t0,         \* t0[c]: start of c's current attempt (c's clock)
    deadline,   \* deadline[c]: end of c's validity (c's clock)
    event       \* the last step, for reading traces (excluded from the VIEW)

vars == <<now, key, off, up, downAt, faults, pc, next, got, t0, deadline, event>>

NoKey == [owner |-> None, exp |-> 0]
NodeClock(n) == now + off[n]
Free(n) == key[n].owner = None \/ NodeClock(n) >= key[n].exp

(* TLC identifies states by this view: the trace-only `event` is left out *)
(* and an expired key counts as no key (node clocks never go back, so it *)
(* can never matter again: SET NX succeeds on both, DEL removes both).   *)
View == <<now, [n \in Nodes |-> IF Free(n) THEN NoKey ELSE key[n]],
          off, up, downAt, faults, pc, next, got, t0, deadline>>

Holding(c) == pc[c] = "cs"

Init ==
    /\ now = 0
    /\ key = [n \in Nodes |-> NoKey]
    /\ off = [n \in Nodes |-> 0]
    /\ up = [n \in Nodes |-> TRUE]
    /\ downAt = [n \in Nodes |-> 0]
    /\ faults = 0
    /\ pc = [c \in Clients |-> "idle"]
    /\ next = [c \in Clients |-> 0]
    /\ got = [c \in Clients |-> {}]
    /\ t0 = [c \in Clients |-> 0]
    /\ deadline = [c \in Clients |-> 0]
    /\ event = <<"init">>

\* DEL-if-token on every running node.
DropKeysOf(c) ==
    [n \in Nodes |-> IF up[n] /\ key[n].owner = c THEN NoKey ELSE key[n]]

Start(c) ==
    /\ pc[c] = "idle"
    /\ pc' = [pc EXCEPT ![c] = "acq"]
    /\ next' = [next EXCEPT ![c] = 1]
    /\ got' = [got EXCEPT ![c] = {}]
    /\ t0' = [t0 EXCEPT ![c] = now]
    /\ event' = <<"start-attempt", c, now>>
    /\ UNCHANGED <<now, key, off, up, downAt, faults, deadline>>

TryNode(c) ==
    /\ pc[c] = "acq"
    /\ next[c] \in Nodes
    /\ LET n == next[c] IN
       IF up[n] /\ Free(n)
         THEN /\ key' = [key EXCEPT ![n] = [owner |-> c, exp |-> NodeClock(n) + TTL]]
              /\ got' = [got EXCEPT ![c] = @ \cup {n}]
              /\ event' = <<"set-ok", c, n, NodeClock(n) + TTL>>
         ELSE /\ UNCHANGED <<key, got>>
              /\ event' = <<"set-fail", c, n>>
    /\ next' = [next EXCEPT ![c] = @ + 1]
    /\ UNCHANGED <<now, off, up, downAt, faults, pc, t0, deadline>>

Finish(c) ==
    /\ pc[c] = "acq"
    /\ next[c] = N + 1
    /\ LET validity == TTL - (now - t0[c]) - Drift IN
       IF Cardinality(got[c]) >= Quorum /\ (now - t0[c]) + Drift < TTL
         THEN /\ pc' = [pc EXCEPT ![c] = "cs"]
              /\ deadline' = [deadline EXCEPT ![c] = t0[c] + TTL - Drift]
              /\ event' = <<"acquired", c, got[c], validity>>
              /\ UNCHANGED key
         ELSE /\ pc' = [pc EXCEPT ![c] = "idle"]
              /\ key' = DropKeysOf(c)
              /\ event' = <<"acquire-failed", c, got[c]>>
              /\ UNCHANGED deadline
    /\ next' = [next EXCEPT ![c] = 0]
    /\ got' = [got EXCEPT ![c] = {}]
    /\ t0' = [t0 EXCEPT ![c] = 0]
    /\ UNCHANGED <<now, off, up, downAt, faults>>

Release(c) ==
    /\ pc[c] = "cs"
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ key' = DropKeysOf(c)
    /\ deadline' = [deadline EXCEPT ![c] = 0]
    /\ event' = <<"release", c>>
    /\ UNCHANGED <<now, off, up, downAt, faults, next, got, t0>>

\* Time passes, but not past the deadline of a client still in its
\* critical section: a holder that is not paused releases in time.
Tick ==
    /\ now < MaxTime
    /\ \A c \in Clients : Holding(c) => now + 1 < deadline[c]
    /\ now' = now + 1
    /\ event' = <<"tick", now + 1>>
    /\ UNCHANGED <<key, off, up, downAt, faults, pc, next, got, t0, deadline>>

JumpClock(n) ==
    /\ ClockJump > 0
    /\ faults < MaxFaults
    /\ off' = [off EXCEPT ![n] = @ + ClockJump]
    /\ faults' = faults + 1
    /\ event' = <<"clock-jump", n, ClockJump>>
    /\ UNCHANGED <<now, key, up, downAt, pc, next, got, t0, deadline>>

CrashNode(n) ==
    /\ Restarts
    /\ faults < MaxFaults
    /\ up[n]
    /\ up' = [up EXCEPT ![n] = FALSE]
    /\ downAt' = [downAt EXCEPT ![n] = now]
    /\ key' = IF Persist THEN key ELSE [key EXCEPT ![n] = NoKey]
    /\ faults' = faults + 1
    /\ event' = <<"crash", n>>
    /\ UNCHANGED <<now, off, pc, next, got, t0, deadline>>

RestartNode(n) ==
    /\ ~up[n]
    /\ now >= downAt[n] + RestartDelay
    /\ up' = [up EXCEPT ![n] = TRUE]
    /\ downAt' = [downAt EXCEPT ![n] = 0]
    /\ event' = <<"restart", n, IF Persist THEN "with-keys" ELSE "empty">>
    /\ UNCHANGED <<now, key, off, faults, pc, next, got, t0, deadline>>

Next ==
    \/ Tick
    \/ \E n \in Nodes : JumpClock(n) \/ CrashNode(n) \/ RestartNode(n)
    \/ \E c \in Clients :
          Start(c) \/ TryNode(c) \/ Finish(c) \/ Release(c)

Spec == Init /\ [][Next]_vars

\* The clients are interchangeable (configs may declare SYMMETRY Symmetry).
Symmetry == Permutations(Clients)

-----------------------------------------------------------------------------
TypeOK ==
    /\ now \in 0..MaxTime
    /\ pc \in [Clients -> {"idle", "acq", "cs"}]
    /\ \A n \in Nodes : key[n].owner \in Clients \cup {None}

(* P1: no two clients believe they hold the lock at the same time. *)
MutualExclusion ==
    \A c, d \in Clients : c /= d => ~(Holding(c) /\ Holding(d))
=============================================================================
