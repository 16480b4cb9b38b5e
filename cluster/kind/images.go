package kind

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gauntlet-dev/gauntlet/cluster/kind/nodeimage"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
)

// Image is an image assembled offline from host files and loaded into every node of a cluster
// (what `kind load docker-image` does, without a registry or a Docker build): a single
// uncompressed layer holding Files, each program with the shared libraries it loads.
type Image struct {
	// Refs are the image's names (the first is its name; the others are more tags).
	Refs []string
	// Files are host files at paths in the image.
	Files []ImageFile
	// Entrypoint, Cmd, WorkingDir and User go into the image's configuration (User "" is
	// root), and so does Env (KEY=VALUE; PATH, when not among them, is the usual one).
	Entrypoint []string
	Cmd        []string
	Env        []string
	WorkingDir string
	User       string
	// Passwd, when set, is written as /etc/passwd and Group as /etc/group.
	Passwd, Group string
}

// ImageFile is a host file (Src) at Dst in the image. A Program's shared libraries and its
// dynamic loader, found through its ELF header, come with it. Link makes Dst a symbolic link
// to Link instead.
type ImageFile struct {
	Src, Dst, Link string
	Program        bool
}

// OperatorImage is the bundled operator's image as operator/Dockerfile makes it, from a
// built binary: /manager as the entrypoint, user 65532:65532 (distroless's nonroot, with
// its /etc/passwd entry), /tmp; a dynamically linked binary (`make build` uses cgo's
// resolver) brings its C library and loader.
func OperatorImage(ref, binary string) Image {
	return Image{
		Refs:       []string{ref},
		Files:      []ImageFile{{Src: binary, Dst: "/manager", Program: true}},
		Entrypoint: []string{"/manager"},
		User:       "65532:65532",
		Passwd:     "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n",
		Group:      "root:x:0:\nnonroot:x:65532:\n",
	}
}

// ValkeyTools are the programs the bundled operator's pods run besides the server: the probes,
// preStop hook, backup and restore scripts (operator/internal/resources) use sh, valkey-cli,
// sleep, mv, sha256sum, cut, wc, tr and cat.
var ValkeyTools = []string{"valkey-cli", "sleep", "mv", "sha256sum", "cut", "wc", "tr", "cat", "ls", "mkdir", "rm", "echo", "env"}

// ValkeyImage is an image of the host's valkey-server (entrypoint, so the operator's
// arguments — the config file first — work as with the official image's entrypoint script),
// valkey-cli, dash as /bin/sh and the coreutils the operator's scripts call, each with its
// shared libraries taken from the host. Where a program is missing it is an error naming it.
func ValkeyImage(refs ...string) (Image, error) {
	img := Image{Refs: refs, Entrypoint: []string{"/usr/bin/valkey-server"}, User: "999:999",
		Passwd: "root:x:0:0:root:/root:/bin/sh\nvalkey:x:999:999:valkey:/data:/bin/sh\n", Group: "root:x:0:\nvalkey:x:999:\n"}
	for _, p := range append([]string{"valkey-server", "dash"}, ValkeyTools...) {
		src, err := findProgram(p)
		if err != nil {
			return Image{}, fmt.Errorf("kind: the Valkey image needs %s from the host: %w", p, err)
		}
		img.Files = append(img.Files, ImageFile{Src: src, Dst: "/usr/bin/" + p, Program: true})
	}
	img.Files = append(img.Files, ImageFile{Dst: "/bin/sh", Link: "/usr/bin/dash"}, ImageFile{Dst: "/usr/bin/sh", Link: "dash"})
	return img, nil
}

func findProgram(p string) (string, error) {
	for _, dir := range []string{"/usr/bin", "/bin", "/usr/sbin", "/sbin", "/usr/local/bin"} {
		if st, err := os.Stat(filepath.Join(dir, p)); err == nil && !st.IsDir() {
			return filepath.Join(dir, p), nil
		}
	}
	return "", fmt.Errorf("%s not found in /usr/bin, /bin, /usr/sbin, /sbin or /usr/local/bin", p)
}

// libDirs are where the host's shared libraries are looked for (Debian's multiarch layout).
var libDirs = []string{"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"}

// expand adds every program's shared libraries (at /lib/x86_64-linux-gnu/<soname>, where the
// loader always looks) and its loader (at its PT_INTERP path).
func (img Image) expand() ([]ImageFile, error) {
	files := append([]ImageFile(nil), img.Files...)
	seen := map[string]bool{}
	for _, f := range files {
		seen[f.Dst] = true
	}
	for i := 0; i < len(files); i++ {
		f := files[i]
		if !f.Program || f.Link != "" {
			continue
		}
		ef, err := elf.Open(f.Src)
		if err != nil {
			return nil, fmt.Errorf("kind: image %s: %s: %w", img.Refs[0], f.Src, err)
		}
		libs, _ := ef.ImportedLibraries()
		for _, prog := range ef.Progs {
			if prog.Type == elf.PT_INTERP {
				data, _ := io.ReadAll(prog.Open())
				interp := strings.TrimRight(string(data), "\x00")
				if !seen[interp] {
					seen[interp] = true
					files = append(files, ImageFile{Src: interp, Dst: interp})
				}
			}
		}
		ef.Close()
		for _, lib := range libs {
			dst := "/lib/x86_64-linux-gnu/" + lib
			if seen[dst] {
				continue
			}
			src := ""
			for _, d := range libDirs {
				if _, err := os.Stat(filepath.Join(d, lib)); err == nil {
					src = filepath.Join(d, lib)
					break
				}
			}
			if src == "" {
				return nil, fmt.Errorf("kind: image %s: %s needs %s, which is not in %v", img.Refs[0], f.Src, lib, libDirs)
			}
			seen[dst] = true
			files = append(files, ImageFile{Src: src, Dst: dst, Program: true}) // libraries have needs too
		}
	}
	return files, nil
}

// build assembles the image: one uncompressed layer, no timestamps (reproducible digests).
func (img Image) build() (v1.Image, error) {
	if len(img.Refs) == 0 {
		return nil, fmt.Errorf("kind: an image without a name")
	}
	files, err := img.expand()
	if err != nil {
		return nil, err
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Dst < files[j].Dst })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	dirs := map[string]bool{}
	var mkdirs func(d string, mode int64) error
	mkdirs = func(d string, mode int64) error {
		if d == "/" || d == "." || dirs[d] {
			return nil
		}
		if err := mkdirs(path.Dir(d), 0o755); err != nil {
			return err
		}
		dirs[d] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: mode, ModTime: epoch})
	}
	if err := mkdirs("/tmp", 0o1777); err != nil {
		return nil, err
	}
	write := func(dst string, data []byte, mode int64) error {
		if err := mkdirs(path.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(dst, "/"), Size: int64(len(data)), Mode: mode, ModTime: epoch}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	if img.Passwd != "" {
		if err := write("/etc/passwd", []byte(img.Passwd), 0o644); err != nil {
			return nil, err
		}
		if err := write("/etc/group", []byte(img.Group), 0o644); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		if f.Link != "" {
			if err := mkdirs(path.Dir(f.Dst), 0o755); err != nil {
				return nil, err
			}
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: strings.TrimPrefix(f.Dst, "/"), Linkname: f.Link, Mode: 0o777, ModTime: epoch}); err != nil {
				return nil, err
			}
			continue
		}
		data, err := os.ReadFile(f.Src) // follows symbolic links: libraries go in as files
		if err != nil {
			return nil, fmt.Errorf("kind: image %s: %w", img.Refs[0], err)
		}
		if err := write(f.Dst, data, 0o755); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	v, err := nodeimage.SingleLayerImage(buf.Bytes(), img.Entrypoint, img.User)
	if err != nil || (len(img.Cmd) == 0 && len(img.Env) == 0 && img.WorkingDir == "") {
		return v, err
	}
	cfg, err := v.ConfigFile()
	if err != nil {
		return nil, err
	}
	c := cfg.Config
	c.Cmd, c.WorkingDir, c.Env = img.Cmd, img.WorkingDir, slices.Clone(c.Env)
	for _, e := range img.Env {
		k, _, _ := strings.Cut(e, "=")
		c.Env = slices.DeleteFunc(c.Env, func(x string) bool { return strings.HasPrefix(x, k+"=") })
		c.Env = append(c.Env, e)
	}
	return mutate.Config(v, c)
}

// WriteArchive writes images as one docker archive (what `docker save` writes, and what
// `ctr images import` and kind's loader read) at file.
func WriteArchive(file string, images []Image) error {
	refs := map[name.Reference]v1.Image{}
	for _, img := range images {
		v, err := img.build()
		if err != nil {
			return err
		}
		for _, r := range img.Refs {
			tag, err := name.NewTag(r)
			if err != nil {
				return fmt.Errorf("kind: image name %q: %w", r, err)
			}
			refs[tag] = v
		}
	}
	return tarball.MultiRefWriteToFile(file, refs)
}

// loadArchive loads a docker archive into every node with kind's own loader (the library call
// behind `kind load docker-image`: `ctr images import` in the node, with its snapshotter).
func loadArchive(file string, ns []nodes.Node) error {
	for _, n := range ns {
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		err = nodeutils.LoadImageArchive(n, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("kind: load images into node %s: %w", n.String(), err)
		}
	}
	return nil
}

// ValkeyImageRefs are the Valkey images the bundled target's ValkeyClusters name: the CRD's
// default (valkey/valkey:8.1) and the campaign's other spec.image value. Both are the host's
// valkey-server (the embedded cluster maps them to the same binary).
var ValkeyImageRefs = []string{"valkey/valkey:8.1", "valkey/valkey:8.0"}

// BundledValkeyImages are the images the bundled Valkey operator needs on a cluster that
// pulls nothing: its own (operatorRef, from the built operatorBinary) and ValkeyImage.
func BundledValkeyImages(operatorRef, operatorBinary string) ([]Image, error) {
	if _, err := os.Stat(operatorBinary); err != nil {
		return nil, fmt.Errorf("kind: the bundled operator's image is assembled from its binary: %w (run `make build`)", err)
	}
	v, err := ValkeyImage(ValkeyImageRefs...)
	if err != nil {
		return nil, err
	}
	return []Image{OperatorImage(operatorRef, operatorBinary), v}, nil
}
