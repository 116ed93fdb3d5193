// Package subprocess drives lock clients that run as local processes over the
// subprocess protocol (docs/subprocess-protocol.md): Subprocess makes an implementation
// of any such program, and Impls lists the ones locklab ships (node-ioredis, the
// Node.js example client, and seed-withlock, a blog post's withLock, both in
// clients/node, found from the working directory, the executable or
// $LOCKLAB_NODE_CLIENT). Each client runs in its own process group and
// dies with locklab (Pdeathsig); faults reach it through ClientProcess.
//
// It builds on lockimpl only. It must not import locks, which imports it, nor
// lockimpl/libs.
package subprocess
