package histories

import (
	"encoding/binary"
	"time"
)

// A stream keeps what it records encoded in bytes: each operation's numbers as varints,
// only those of its eight input and output numbers that are not zero, and its strings
// after their lengths, one operation after the other in chunks of bytes. A run's history
// is most of its heap; kept as Ops (seven pointers each, and a token string apiece) the
// garbage collector scanned all of it on every cycle, which the profiles of the recorded
// workload showed as most of what recording cost. Bytes hold no pointers, so the
// collector never looks inside them. An acquire with a 32-byte token keeps 62 bytes
// (BenchmarkStreamRecord's kept-bytes/op), where a fixed 120-byte slot and its strings
// (the form before this one) took 163.

const (
	maxChunk   = 64 << 10 // bytes per chunk at most; an operation with more text is kept whole
	firstChunk = 4 << 10  // bytes in a stream's first chunk, each next one twice as large
	// maxNumbers bounds an operation's encoding besides its strings: the mask, call,
	// return, process, client, six string lengths and eight numbers, as varints.
	maxNumbers = 20 * binary.MaxVarintLen64
)

// store is what one stream recorded: its operations encoded in chunks, and the few kept
// whole (those naming the servers that granted a lock, or with more text than a chunk
// holds).
type store struct {
	chunks [][]byte
	n      int
	whole  []Op
}

// opStrings are op's strings in the order they are encoded.
func opStrings(op *Op) [6]string {
	return [6]string{op.Key, string(op.Kind), string(op.Outcome), op.Input.Token, op.Output.Token, op.Output.Error}
}

// opNumbers are op's input and output numbers in the order the mask's bits name them.
func opNumbers(op *Op) [8]int64 {
	return [8]int64{
		int64(op.Input.TTL), op.Input.Fence, op.Input.Value, op.Input.Base,
		op.Output.Fence, op.Output.Value, int64(op.Output.Validity), int64(op.Output.Granted),
	}
}

// wholeBit in an encoded operation's mask says it is kept whole; the mask's other bits
// say which of opNumbers follow.
const wholeBit = 1 << 8

// keep appends op.
func (st *store) keep(op Op) {
	st.n++
	strs := opStrings(&op)
	text := 0
	for _, s := range strs {
		text += len(s)
	}
	if len(op.Output.Nodes) > 0 || text > maxChunk {
		st.whole = append(st.whole, op)
		b := st.room(2 * binary.MaxVarintLen64)
		b = binary.AppendUvarint(b, wholeBit)
		st.done(binary.AppendUvarint(b, uint64(len(st.whole)-1)))
		return
	}
	nums := opNumbers(&op)
	var mask uint64
	for i, v := range nums {
		if v != 0 {
			mask |= 1 << i
		}
	}
	b := st.room(maxNumbers + text)
	b = binary.AppendUvarint(b, mask)
	b = binary.AppendVarint(b, op.Call)
	b = binary.AppendVarint(b, op.Return-op.Call)
	b = binary.AppendVarint(b, int64(op.Process))
	b = binary.AppendVarint(b, int64(op.Client))
	for _, s := range strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, v := range nums {
		if v != 0 {
			b = binary.AppendVarint(b, v)
		}
	}
	st.done(b)
}

// room returns the last chunk, with room for n more bytes: a new chunk when it has not,
// so that appending never copies what is recorded.
func (st *store) room(n int) []byte {
	last := len(st.chunks) - 1
	if last < 0 || cap(st.chunks[last])-len(st.chunks[last]) < n {
		size := maxChunk
		if len(st.chunks) < 4 {
			size = firstChunk << len(st.chunks) // short runs touch little memory
		}
		st.chunks = append(st.chunks, make([]byte, 0, max(size, n)))
		last++
	}
	return st.chunks[last]
}

// done puts back the last chunk, grown by an operation.
func (st *store) done(b []byte) { st.chunks[len(st.chunks)-1] = b }

// len is the number of operations kept.
func (st *store) len() int { return st.n }

// appendOps appends the operations kept to ops, in the order they were recorded.
func (st *store) appendOps(ops []Op, in interner) []Op {
	for _, b := range st.chunks {
		for len(b) > 0 {
			var op Op
			op, b = st.op(b, in)
			ops = append(ops, op)
		}
	}
	return ops
}

// op decodes the operation at the start of b, and returns the rest of b. Strings that
// repeat (keys, kinds, outcomes, errors) are shared through in; tokens, each of one
// lease, are not.
func (st *store) op(b []byte, in interner) (Op, []byte) {
	uv := func() uint64 {
		v, n := binary.Uvarint(b)
		b = b[n:]
		return v
	}
	sv := func() int64 {
		v, n := binary.Varint(b)
		b = b[n:]
		return v
	}
	mask := uv()
	if mask&wholeBit != 0 {
		return st.whole[uv()], b
	}
	call := sv()
	ret := call + sv()
	process, client := sv(), sv()
	var strs [6][]byte
	for i := range strs {
		n := uv()
		strs[i], b = b[:n], b[n:]
	}
	var nums [8]int64
	for i := range nums {
		if mask&(1<<i) != 0 {
			nums[i] = sv()
		}
	}
	return Op{
		Process: int(process), Client: int(client),
		Key: in.get(strs[0]), Kind: Kind(in.get(strs[1])), Outcome: Outcome(in.get(strs[2])),
		Input: Input{
			TTL: time.Duration(nums[0]), Token: string(strs[3]), Fence: nums[1], Value: nums[2], Base: nums[3],
		},
		Output: Output{
			Token: string(strs[4]), Fence: nums[4], Value: nums[5], Validity: time.Duration(nums[6]),
			Granted: time.Duration(nums[7]), Error: in.get(strs[5]),
		},
		Call: call, Return: ret,
	}, b
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
