// Package timeline draws one run as a picture in the style of Kleppmann's figures: one
// lane per client, one per lock server and one for the protected store; leases from
// grant to expiry by the server's clock, beliefs, fault windows, each write with its
// fence accepted or refused, and the first violation with its explanation. The picture
// is a self-contained SVG (no script, no external resource) that opens from the run
// directory. It depends only on the history and its checked result. Its size and the
// time to draw it are bounded whatever the history's size (bound.go): a long run is
// cropped around its story, a busy one narrowed to what a browser draws comfortably,
// and what is left out is counted under the axis.
package timeline
