package histories

import "time"

// A stream keeps what it records in slots: operations without pointers, their strings
// copied one after the other into the stream's text. A run's history is most of its
// heap; kept as Ops (seven pointers each, and a token string apiece) the garbage
// collector scanned all of it on every cycle, which the profiles of the recorded
// workload showed as most of what recording cost. Slots and text hold no pointers, so
// the collector never looks inside them, and take half the memory. BenchmarkStreamRecord
// (CPU time of a million operations amid a client's garbage, 2 cores): recording cost
// about 0.4 µs per operation kept as Ops, 0.15 µs in slots.

// slot is one operation as a stream keeps it.
type slot struct {
	call, ret, process, client int64
	text                       int64     // where its strings start: text chunk<<32 | offset
	lens                       [6]uint16 // its strings' lengths, in opStrings' order
	whole                      int32     // > 0: the operation is kept whole, at whole-1
	in                         [4]int64  // Input's TTL, Fence, Value, Base
	out                        [4]int64  // Output's Fence, Value, Validity, Granted
}

const (
	chunkSize = 1024     // slots per chunk: appending never copies what is recorded
	textChunk = 64 << 10 // bytes per text chunk; an operation with more text is kept whole
)

// store is what one stream recorded: slots in fixed-size chunks, their text, and the few
// operations kept whole (those naming the servers that granted a lock, or with more text
// than a text chunk holds).
type store struct {
	chunks [][]slot
	text   [][]byte
	whole  []Op
}

// opStrings are op's strings in the order a slot keeps their lengths.
func opStrings(op *Op) [6]string {
	return [6]string{op.Key, string(op.Kind), string(op.Outcome), op.Input.Token, op.Output.Token, op.Output.Error}
}

// keep appends op.
func (st *store) keep(op Op) {
	strs := opStrings(&op)
	n := 0
	for _, s := range strs {
		n += len(s)
	}
	if len(op.Output.Nodes) > 0 || n > textChunk {
		st.whole = append(st.whole, op)
		st.push(slot{whole: int32(len(st.whole))})
		return
	}
	sl := slot{
		call: op.Call, ret: op.Return, process: int64(op.Process), client: int64(op.Client),
		text: st.write(strs, n),
		in:   [4]int64{int64(op.Input.TTL), op.Input.Fence, op.Input.Value, op.Input.Base},
		out:  [4]int64{op.Output.Fence, op.Output.Value, int64(op.Output.Validity), int64(op.Output.Granted)},
	}
	for i, s := range strs {
		sl.lens[i] = uint16(len(s))
	}
	st.push(sl)
}

// push appends sl to the last chunk, starting a new one when it is full.
func (st *store) push(sl slot) {
	last := len(st.chunks) - 1
	if last < 0 || len(st.chunks[last]) == chunkSize {
		st.chunks = append(st.chunks, make([]slot, 0, chunkSize))
		last++
	}
	st.chunks[last] = append(st.chunks[last], sl)
}

// write appends strs (n bytes in all, at most textChunk) to the text and returns where
// they start.
func (st *store) write(strs [6]string, n int) int64 {
	last := len(st.text) - 1
	if last < 0 || len(st.text[last])+n > textChunk {
		st.text = append(st.text, make([]byte, 0, textChunk))
		last++
	}
	at := int64(last)<<32 | int64(len(st.text[last]))
	for _, s := range strs {
		st.text[last] = append(st.text[last], s...)
	}
	return at
}

// len is the number of operations kept.
func (st *store) len() int {
	n := 0
	for _, c := range st.chunks {
		n += len(c)
	}
	return n
}

// appendOps appends the operations kept to ops, in the order they were recorded.
func (st *store) appendOps(ops []Op, in interner) []Op {
	for _, c := range st.chunks {
		for i := range c {
			ops = append(ops, st.op(&c[i], in))
		}
	}
	return ops
}

// op is the operation sl keeps. Strings that repeat (keys, kinds, outcomes, errors) are
// shared through in; tokens, each of one lease, are not.
func (st *store) op(sl *slot, in interner) Op {
	if sl.whole > 0 {
		return st.whole[sl.whole-1]
	}
	text := st.text[sl.text>>32][sl.text&(1<<32-1):]
	var strs [6][]byte
	for i, n := range sl.lens {
		strs[i], text = text[:n], text[n:]
	}
	return Op{
		Process: int(sl.process), Client: int(sl.client),
		Key: in.get(strs[0]), Kind: Kind(in.get(strs[1])), Outcome: Outcome(in.get(strs[2])),
		Input: Input{
			TTL: time.Duration(sl.in[0]), Token: string(strs[3]), Fence: sl.in[1], Value: sl.in[2], Base: sl.in[3],
		},
		Output: Output{
			Token: string(strs[4]), Fence: sl.out[0], Value: sl.out[1], Validity: time.Duration(sl.out[2]),
			Granted: time.Duration(sl.out[3]), Error: in.get(strs[5]),
		},
		Call: sl.call, Return: sl.ret,
	}
}

// interner hands out one string for equal byte sequences.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok { // the lookup does not allocate
		return s
	}
	s := string(b)
	in[s] = s
	return s
}
