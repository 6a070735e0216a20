package nfsclient_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"

	"github.com/gonfsrdma/gonfsrdma/nfsclient"
)

// Mount an export over RDMA, falling back to TCP, and read a file.
func ExampleDial() {
	ctx := context.Background()
	fsys, err := nfsclient.Dial(ctx, "nfs://fileserver/srv/data?proto=rdma&fallback=tcp&uid=1000&gid=1000")
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	data, err := fsys.ReadFile("results/run1.csv")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(data), "bytes over", fsys.Proto())
}

// Walk the export with the io/fs helpers.
func ExampleFS_walk() {
	fsys, err := nfsclient.Dial(context.Background(), "nfs://fileserver/srv/data")
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fmt.Println(p)
		return nil
	})
}

// Copy a local file to the server with 16 pipelined 1 MiB WRITEs in
// flight, then make it stable.
func ExampleFile_ReadFrom() {
	fsys, err := nfsclient.Dial(context.Background(), "nfs://fileserver/srv/data?bs=1M&depth=16")
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	src, err := os.Open("dataset.bin")
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	dst, err := fsys.Create("staging/dataset.bin")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil { // uses (*File).ReadFrom
		log.Fatal(err)
	}
	if err := dst.Close(); err != nil { // COMMIT; re-sends if the server restarted
		log.Fatal(err)
	}
}

// Use the export through go-billy, e.g. as a go-git worktree.
func ExampleFS_Billy() {
	fsys, err := nfsclient.Dial(context.Background(), "nfs://fileserver/srv/repos")
	if err != nil {
		log.Fatal(err)
	}
	defer fsys.Close()
	bfs := fsys.Billy()
	f, err := bfs.Create("/notes/todo.txt")
	if err != nil {
		log.Fatal(err)
	}
	f.Write([]byte("remote files over RDMA\n"))
	f.Close()
	if _, err := bfs.Stat("/notes/missing"); os.IsNotExist(err) {
		fmt.Println("not there")
	}
}
