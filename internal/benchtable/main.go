// Command benchtable is `make bench`: it runs the benchmarks that measure locklab's
// performance goals (each a go test -bench invocation, its output shown as it comes),
// and prints and writes the table of goals, bound, measured value, ratio and command,
// with the adversarial curve and the scaling of plan throughput, into BENCHMARKS.md
// between its bench markers.
//
//	go run ./internal/benchtable [-markdown BENCHMARKS.md] [-out out/bench]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/locklab/locklab/internal/mdblock"
)

// The lines of BENCHMARKS.md between which the table goes.
const (
	begin = "<!-- bench:begin -->"
	end   = "<!-- bench:end -->"
)

func main() {
	markdown := flag.String("markdown", "", "put the tables between the bench markers of this Markdown file")
	out := flag.String("out", "out/bench", "directory for the raw output (bench.txt) and the tables (bench.md)")
	goBin := flag.String("go", "go", "the go command")
	flag.Parse()
	if err := bench(*goBin, *out, *markdown); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(2)
	}
}

func bench(goBin, out, markdown string) error {
	if markdown != "" {
		if err := mdblock.Check(markdown, begin, end); err != nil {
			return err // before a run of minutes, not after
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	start := time.Now()
	var raw bytes.Buffer
	res := results{}
	for _, r := range runs() {
		fmt.Printf("== %s\n", command(r))
		cmd := exec.Command(goBin, r.args()...)
		var buf bytes.Buffer
		cmd.Stdout = io.MultiWriter(os.Stdout, &buf)
		cmd.Stderr = io.MultiWriter(os.Stderr, &buf)
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("%s: %w", command(r), err)
		}
		raw.Write(buf.Bytes())
		if err := parse(&buf, res); err != nil {
			return fmt.Errorf("%s: %w", command(r), err)
		}
	}
	if err := os.WriteFile(filepath.Join(out, "bench.txt"), raw.Bytes(), 0o644); err != nil {
		return err
	}
	md, missed := document(res, fmt.Sprintf("Measured by `make bench` on %s (%s, %d cores, %s in all).",
		time.Now().UTC().Format(time.RFC3339), runtime.Version(), runtime.NumCPU(), time.Since(start).Round(time.Second)))
	fmt.Print("\n" + md)
	if err := os.WriteFile(filepath.Join(out, "bench.md"), []byte(md), 0o644); err != nil {
		return err
	}
	if markdown != "" {
		if err := mdblock.Update(markdown, md, begin, end); err != nil {
			return err
		}
	}
	if missed > 0 {
		fmt.Printf("%d goals missed or not measured\n", missed)
	}
	return nil
}
