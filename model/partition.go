package model

import (
	"slices"

	"github.com/anishathalye/porcupine"
)

// Keyed is implemented by every input type of this package: the key it is about. Keys are
// independent locks and independent registers, so a history is linearizable iff each key's
// sub-history is, which is what lets Porcupine check keys separately and in parallel.
type Keyed interface{ PartitionKey() string }

// PartitionByKey splits a history by the key of each operation's input, in sorted key order
// so that partitions (and the visualisation) are deterministic. Inputs that are not Keyed
// all go to the partition of the empty key.
func PartitionByKey(history []porcupine.Operation) [][]porcupine.Operation {
	byKey := make(map[string][]porcupine.Operation)
	for _, op := range history {
		k := ""
		if in, ok := op.Input.(Keyed); ok {
			k = in.PartitionKey()
		}
		byKey[k] = append(byKey[k], op)
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([][]porcupine.Operation, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, byKey[k])
	}
	return parts
}

// mix is a small integer hash (splitmix64's finaliser) for the models' Hash functions.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}
