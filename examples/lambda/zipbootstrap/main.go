// Command zipbootstrap writes the deployment package of the upkeep
// function: a zip holding one executable file named bootstrap, as the
// provided.al2023 runtime wants it. make lambda-zip runs it, so that
// building the package needs Go alone.
//
//	go run ./examples/lambda/zipbootstrap OUT.zip BOOTSTRAP
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: zipbootstrap OUT.zip BOOTSTRAP")
		os.Exit(2)
	}
	if err := write(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "zipbootstrap:", err)
		os.Exit(1)
	}
}

// write zips the file at bin into out as "bootstrap", executable by all.
func write(out, bin string) (err error) {
	src, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer src.Close()
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}()
	zw := zip.NewWriter(f)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		return err
	}
	return zw.Close()
}
