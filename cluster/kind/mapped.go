package kind

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/imagemap"
)

// ErrUnmappedImage is returned by Create on Gauntlet's offline node image, which pulls
// nothing, when the target runs an image that is neither among Options.Images nor mapped to
// host programs by its image mapping.
var ErrUnmappedImage = errors.New("kind: the offline node image pulls no image, and none is assembled for")

// MappedImage is image ref assembled from the host programs its image mapping rule r runs on
// the embedded cluster (imagemap.ImagePrograms: the rule's programs at their image paths,
// its entrypoint's), each with its shared libraries, and the rule's entrypoint, default
// arguments, environment, working folder, user and accounts in the image's configuration.
// The rule's files (host files and folders) are in it at the same paths. What the image's
// processes would find on the host and the rule names neither as a program nor among its
// files is not in it.
func MappedImage(ref string, r imagemap.Rule) (Image, error) {
	progs, err := imagemap.ImagePrograms(r)
	if err != nil {
		return Image{}, fmt.Errorf("kind: image %s: %w", ref, err)
	}
	img := Image{Refs: []string{ref}, Entrypoint: r.Entrypoint, Cmd: r.Cmd, WorkingDir: r.WorkingDir, User: r.User}
	for _, p := range progs {
		img.Files = append(img.Files, ImageFile{Src: p.Path, Dst: p.Target, Program: true})
	}
	for _, f := range r.Files {
		files, err := hostFiles(f)
		if err != nil {
			fix := r.Install
			if fix == "" {
				fix = "install it on this host or remove it from the rule's files"
			}
			return Image{}, fmt.Errorf("kind: image %s: the rule's files: %w: %s", ref, err, fix)
		}
		img.Files = append(img.Files, files...)
	}
	// The entrypoint as the image names it: a bare name is found on PATH, where it was put.
	if len(img.Entrypoint) == 0 && r.PrependProgram != "" {
		img.Entrypoint = []string{r.PrependProgram}
	}
	img.Env = r.EnvList()
	if len(r.Users) > 0 {
		img.Passwd, img.Group = imagemap.Passwd(r.Users), imagemap.Group(r.Users)
	}
	return img, nil
}

// WithMappedImages returns the provider with images assembled from rules (MappedImage), to be
// loaded into clusters of the offline node image, which pull nothing; clusters of kind's
// upstream node image pull the real images instead. required are the images the target runs
// for sure (its operator's and its deploy steps'): one that no rule maps to programs makes
// Create fail on the offline node image, naming it. optional are strings that may name images
// (its CRs' values: an operand image the operator runs): those a rule maps are assembled too,
// the others ignored. Images already among Options.Images are left alone.
func (p Provider) WithMappedImages(rules []imagemap.Rule, required, optional []string) (cluster.Provider, error) {
	have := map[string]bool{}
	for _, img := range p.Options.Images {
		for _, r := range img.Refs {
			have[r] = true
		}
	}
	for _, img := range p.Options.Mapped {
		have[img.Refs[0]] = true
	}
	mapped := append([]Image(nil), p.Options.Mapped...)
	unmapped := append([]string(nil), p.Options.Unmapped...)
	matched, err := imagemap.MatchEach(rules, append(slices.Clone(required), optional...))
	if err != nil {
		return nil, err
	}
	add := func(ref string, mustMap bool) error {
		if ref == "" || have[ref] {
			return nil
		}
		r, ok := matched[ref]
		if !ok || r.Simulate {
			if mustMap {
				have[ref] = true
				unmapped = append(unmapped, ref)
			}
			return nil
		}
		have[ref] = true
		img, err := MappedImage(ref, r)
		if err != nil {
			return err
		}
		mapped = append(mapped, img)
		return nil
	}
	for _, ref := range required {
		if err := add(ref, true); err != nil {
			return nil, err
		}
	}
	for _, ref := range optional {
		if err := add(ref, false); err != nil {
			return nil, err
		}
	}
	p.Options.Mapped, p.Options.Unmapped = mapped, unmapped
	return p, nil
}

// offlineImages adds the mapped images to opts.Images for a cluster of the offline node
// image, or says which images it could never run.
func offlineImages(opts Options) (Options, error) {
	if len(opts.Unmapped) > 0 {
		return opts, fmt.Errorf("%w %s: add an imageMapping rule naming the programs each runs (they are put in an image), or use kind's upstream node image with registry access (--node-image)",
			ErrUnmappedImage, strings.Join(opts.Unmapped, ", "))
	}
	opts.Images = append(append([]Image(nil), opts.Images...), opts.Mapped...)
	return opts, nil
}

// hostFiles lists the regular files under root (root itself when it is a file), at the
// same paths, symbolic links followed to the files they name (folders they name are not
// entered). Executable ELF files are programs: their shared libraries come with them.
func hostFiles(root string) ([]ImageFile, error) {
	var out []ImageFile
	add := func(p string) error {
		st, err := os.Stat(p) // follows links
		if err != nil || !st.Mode().IsRegular() {
			return err
		}
		out = append(out, ImageFile{Src: p, Dst: p, Program: st.Mode()&0o111 != 0 && isELF(p)})
		return nil
	}
	st, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return out, add(root)
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		return add(p)
	})
	return out, err
}

// isELF reports whether the file at p starts with the ELF magic number.
func isELF(p string) bool {
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == "\x7fELF"
}
