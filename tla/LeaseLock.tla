------------------------------ MODULE LeaseLock ------------------------------
(***************************************************************************)
(* One Redis instance grants a lease on one key:                          *)
(*     SET lock <token> NX PX <TTL>   plus   INCR fence                    *)
(* (one atomic step here, as a Lua script would do it).  Time is a        *)
(* bounded integer global clock `now` that advances by Tick.  The server  *)
(* judges expiry on its own clock (now + srvOff; a clock jump moves it    *)
(* forward); every client has its own clock clk[c], which may lag behind  *)
(* the global time by at most MaxDrift ticks.                             *)
(*                                                                         *)
(* The critical section is the read-modify-write of DESIGN.md P2 on a     *)
(* protected store:                                                        *)
(*     acquire -> check -> read -> (work) -> check -> write(read+1)        *)
(*             -> release (DEL only if the key still holds our token)     *)
(* A careful client checks its remaining validity (on its own clock)      *)
(* before the read and before the write and gives up (releases) when it  *)
(* has run out.  A careful client that is not paused is also timely: it   *)
(* finishes or gives up before its own clock reaches its deadline, so     *)
(* time may not pass that deadline while it is still in its critical      *)
(* section (an upper bound on its step delays, expressed as a condition   *)
(* on Tick).  A paused client (a GC pause, or a write stuck in the        *)
(* network) takes no steps and holds no time back; the pause can fall     *)
(* anywhere in the critical section, in particular between the check and *)
(* the write.  A careless client never checks and is not bound by its     *)
(* lease: its work can take longer than the TTL.                          *)
(*                                                                         *)
(* The store applies fencing: "off", "writes" (a write with fence f is    *)
(* accepted iff f >= the largest fence seen on writes) or "full" (reads   *)
(* and writes carry the fence; one with f < the largest fence seen on     *)
(* reads or writes is rejected).  A rejected client gives up.             *)
(***************************************************************************)
EXTENDS Naturals, Sequences, FiniteSets, TLC

CONSTANTS
    Clients,      \* the clients (model values)
    None,         \* a model value: "nobody"
    TTL,          \* lease length in ticks
    MaxTime,      \* the global clock stops here (keeps the model finite)
    MaxAcquires,  \* at most this many successful acquisitions in a behaviour
    Fencing,      \* "off" | "writes" | "full"
    Pauses,       \* TRUE: clients may pause at any step of the critical section
    Careful,      \* TRUE: validity checks before read and write, timely give-up
    MaxDrift,     \* a client's clock may fall this many ticks behind `now`
    Margin,       \* the careful client subtracts this from its validity
    ServerJump    \* 0: none; k > 0: the server clock may jump forward k once

ASSUME /\ Fencing \in {"off", "writes", "full"}
       /\ Pauses \in BOOLEAN /\ Careful \in BOOLEAN
       /\ TTL \in Nat \ {0} /\ MaxTime \in Nat /\ MaxAcquires \in Nat
       /\ MaxDrift \in Nat /\ Margin \in Nat /\ ServerJump \in Nat
       /\ Margin < TTL /\ None \notin Clients

VARIABLES
    now,        \* global (real) time
    clk,        \* clk[c]: client c's own clock
    srvOff,     \* offset of the server's clock (0, or ServerJump after the jump)
    lock,       \* the key: [owner, tok, exp] or NoLock; exp is on the server clock
    fenceCtr,   \* the INCR counter on the server
    pc,         \* client program counter
    paused,     \* paused[c]: client c is in a pause
    fence,      \* fence[c]: fence (= token) of c's current lease, 0 if none
    deadline,   \* deadline[c]: end of c's validity on c's own clock
    readVal,    \* readVal[c]: the value c read from the store
    store,      \* the protected register
    maxFence,   \* the largest fence the store has seen (per the fencing mode)
    accepted,   \* number of writes the store accepted (history variable)
    grants,     \* sequence of fences granted by successful acquires (history)
    event       \* the last step, for reading traces (excluded from the VIEW)

vars == <<now, clk, srvOff, lock, fenceCtr, pc, paused, fence, deadline,
          readVal, store, maxFence, accepted, grants, event>>
View == <<now, clk, srvOff, lock, fenceCtr, pc, paused, fence, deadline,
          readVal, store, maxFence, accepted, grants>>

NoLock == [owner |-> None, tok |-> 0, exp |-> 0]
SrvClock == now + srvOff
Max(a, b) == IF a >= b THEN a ELSE b

\* The states in which a client believes it holds the lock (DESIGN.md P1:
\* from the return of its acquire until the call of its release).
CS == {"chkR", "read", "chkW", "write"}
Holding(c) == pc[c] \in CS

Init ==
    /\ now = 0
    /\ clk = [c \in Clients |-> 0]
    /\ srvOff = 0
    /\ lock = NoLock
    /\ fenceCtr = 0
    /\ pc = [c \in Clients |-> "idle"]
    /\ paused = [c \in Clients |-> FALSE]
    /\ fence = [c \in Clients |-> 0]
    /\ deadline = [c \in Clients |-> 0]
    /\ readVal = [c \in Clients |-> 0]
    /\ store = 0
    /\ maxFence = 0
    /\ accepted = 0
    /\ grants = <<>>
    /\ event = <<"init">>

(* SET lock tok NX PX TTL succeeds when the key is absent or expired on   *)
(* the server's clock; the same script INCRs the fence counter.           *)
Acquire(c) ==
    /\ pc[c] = "idle"
    /\ Len(grants) < MaxAcquires
    /\ lock.owner = None \/ SrvClock >= lock.exp
    /\ LET f == fenceCtr + 1 IN
       /\ fenceCtr' = f
       /\ lock' = [owner |-> c, tok |-> f, exp |-> SrvClock + TTL]
       /\ fence' = [fence EXCEPT ![c] = f]
       /\ deadline' = [deadline EXCEPT ![c] = clk[c] + TTL - Margin]
       /\ grants' = Append(grants, f)
       /\ event' = <<"acquire", c, f>>
    /\ pc' = [pc EXCEPT ![c] = "chkR"]
    /\ UNCHANGED <<now, clk, srvOff, paused, readVal, store, maxFence, accepted>>

\* The validity check before touching the store (a careless client skips it).
Valid(c) == ~Careful \/ clk[c] < deadline[c]

Check(c, from, to) ==
    /\ pc[c] = from
    /\ ~paused[c]
    /\ IF Valid(c)
         THEN /\ pc' = [pc EXCEPT ![c] = to]
              /\ event' = <<"check-ok", c, clk[c]>>
         ELSE /\ pc' = [pc EXCEPT ![c] = "rel"]
              /\ event' = <<"check-expired", c, clk[c]>>
    /\ UNCHANGED <<now, clk, srvOff, lock, fenceCtr, paused, fence, deadline,
                   readVal, store, maxFence, accepted, grants>>

Read(c) ==
    /\ pc[c] = "read"
    /\ ~paused[c]
    /\ IF Fencing = "full" /\ fence[c] < maxFence
         THEN /\ pc' = [pc EXCEPT ![c] = "rel"]
              /\ event' = <<"read-rejected", c, fence[c]>>
              /\ UNCHANGED <<readVal, maxFence>>
         ELSE /\ readVal' = [readVal EXCEPT ![c] = store]
              /\ maxFence' = IF Fencing = "full" THEN Max(maxFence, fence[c])
                                                 ELSE maxFence
              /\ pc' = [pc EXCEPT ![c] = "chkW"]
              /\ event' = <<"read", c, store, fence[c]>>
    /\ UNCHANGED <<now, clk, srvOff, lock, fenceCtr, paused, fence, deadline,
                   store, accepted, grants>>

Write(c) ==
    /\ pc[c] = "write"
    /\ ~paused[c]
    /\ pc' = [pc EXCEPT ![c] = "rel"]
    /\ IF Fencing = "off" \/ fence[c] >= maxFence
         THEN /\ store' = readVal[c] + 1
              /\ accepted' = accepted + 1
              /\ maxFence' = IF Fencing = "off" THEN maxFence
                                                ELSE Max(maxFence, fence[c])
              /\ event' = <<"write", c, readVal[c] + 1, fence[c]>>
         ELSE /\ event' = <<"write-rejected", c, readVal[c] + 1, fence[c]>>
              /\ UNCHANGED <<store, accepted, maxFence>>
    /\ UNCHANGED <<now, clk, srvOff, lock, fenceCtr, paused, fence, deadline,
                   readVal, grants>>

\* DEL only if the key still holds our token (the compare-and-delete script).
Release(c) ==
    /\ pc[c] = "rel"
    /\ ~paused[c]
    /\ lock' = IF lock.tok = fence[c] THEN NoLock ELSE lock
    /\ pc' = [pc EXCEPT ![c] = "idle"]
    /\ fence' = [fence EXCEPT ![c] = 0]
    /\ deadline' = [deadline EXCEPT ![c] = 0]
    /\ readVal' = [readVal EXCEPT ![c] = 0]
    /\ event' = <<"release", c, fence[c]>>
    /\ UNCHANGED <<now, clk, srvOff, fenceCtr, paused, store, maxFence,
                   accepted, grants>>

Pause(c) ==
    /\ Pauses
    /\ pc[c] \in CS
    /\ ~paused[c]
    /\ paused' = [paused EXCEPT ![c] = TRUE]
    /\ event' = <<"pause", c>>
    /\ UNCHANGED <<now, clk, srvOff, lock, fenceCtr, pc, fence, deadline,
                   readVal, store, maxFence, accepted, grants>>

Resume(c) ==
    /\ paused[c]
    /\ paused' = [paused EXCEPT ![c] = FALSE]
    /\ event' = <<"resume", c>>
    /\ UNCHANGED <<now, clk, srvOff, lock, fenceCtr, pc, fence, deadline,
                   readVal, store, maxFence, accepted, grants>>

\* A careful client that is not paused acts before its own clock reaches its
\* deadline: time may not pass that point while it is in the critical section.
\* A paused or careless client does not hold time back.
Timely(c) == Careful /\ ~paused[c] /\ Holding(c)

Tick ==
    /\ now < MaxTime
    /\ now' = now + 1
    /\ \E newClk \in [Clients -> 0..MaxTime] :
          /\ \A c \in Clients :
                /\ newClk[c] \in {clk[c], clk[c] + 1}
                /\ now + 1 - newClk[c] <= MaxDrift
                /\ Timely(c) => newClk[c] < deadline[c]
          /\ clk' = newClk
    /\ event' = <<"tick", now + 1>>
    /\ UNCHANGED <<srvOff, lock, fenceCtr, pc, paused, fence, deadline,
                   readVal, store, maxFence, accepted, grants>>

\* The server's clock jumps forward (NTP step, operator): keys expire early.
JumpServerClock ==
    /\ ServerJump > 0
    /\ srvOff = 0
    /\ srvOff' = ServerJump
    /\ event' = <<"server-clock-jump", ServerJump>>
    /\ UNCHANGED <<now, clk, lock, fenceCtr, pc, paused, fence, deadline,
                   readVal, store, maxFence, accepted, grants>>

Next ==
    \/ Tick
    \/ JumpServerClock
    \/ \E c \in Clients :
          \/ Acquire(c)
          \/ Check(c, "chkR", "read")
          \/ Read(c)
          \/ Check(c, "chkW", "write")
          \/ Write(c)
          \/ Release(c)
          \/ Pause(c)
          \/ Resume(c)

Spec == Init /\ [][Next]_vars

\* The clients are interchangeable (configs may declare SYMMETRY Symmetry).
Symmetry == Permutations(Clients)

-----------------------------------------------------------------------------
TypeOK ==
    /\ now \in 0..MaxTime
    /\ pc \in [Clients -> {"idle", "rel"} \cup CS]
    /\ paused \in [Clients -> BOOLEAN]
    /\ lock.owner \in Clients \cup {None}

(* P1: no two clients believe they hold the lock at the same time. *)
MutualExclusion ==
    \A c, d \in Clients : c /= d => ~(Holding(c) /\ Holding(d))

(* P2: no lost update.  Every accepted write stores (value read) + 1, so  *)
(* as long as each accepted write overwrote exactly the value its writer *)
(* read, with no accepted write in between, the register equals the      *)
(* number of accepted writes; the first write that overwrites any other   *)
(* value leaves it smaller than that count (values only grow before it). *)
StoreSafety == store = accepted

(* P3: fences granted by successful acquires grow strictly in real-time order. *)
FenceMonotonic ==
    \A i, j \in 1..Len(grants) : i < j => grants[i] < grants[j]
=============================================================================
