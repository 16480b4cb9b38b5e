package kind

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gauntlet-dev/gauntlet/cluster"
	"github.com/gauntlet-dev/gauntlet/cluster/local/imagemap"
)

// ErrUnmappedImage is returned by Create on Gauntlet's offline node image, which pulls
// nothing, when the target runs an image that is neither among Options.Images nor mapped to
// host programs by its image mapping.
var ErrUnmappedImage = errors.New("kind: the offline node image pulls no image, and none is assembled for")

// MappedImage is image ref assembled from the host programs its image mapping rule r runs on
// the embedded cluster (imagemap.ImagePrograms: the rule's programs at their image paths,
// its entrypoint's), each with its shared libraries, and the rule's entrypoint, default
// arguments, environment, working folder, user and accounts in the image's configuration.
// What the image's processes would find on the host by name and the rule does not name is
// not in it: such images (a PostgreSQL operand) need registry access on kind.
func MappedImage(ref string, r imagemap.Rule) (Image, error) {
	progs, err := imagemap.ImagePrograms(r)
	if err != nil {
		return Image{}, fmt.Errorf("kind: image %s: %w", ref, err)
	}
	img := Image{Refs: []string{ref}, Entrypoint: r.Entrypoint, Cmd: r.Cmd, WorkingDir: r.WorkingDir, User: r.User}
	for _, p := range progs {
		img.Files = append(img.Files, ImageFile{Src: p.Path, Dst: p.Target, Program: true})
	}
	// The entrypoint as the image names it: a bare name is found on PATH, where it was put.
	if len(img.Entrypoint) == 0 && r.PrependProgram != "" {
		img.Entrypoint = []string{r.PrependProgram}
	}
	keys := make([]string, 0, len(r.Env))
	for k := range r.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		img.Env = append(img.Env, k+"="+r.Env[k])
	}
	if len(r.Users) > 0 {
		var pw, gr strings.Builder
		pw.WriteString("root:x:0:0:root:/root:/bin/sh\n")
		gr.WriteString("root:x:0:\n")
		for _, u := range r.Users {
			home, shell := u.Home, u.Shell
			if home == "" {
				home = "/"
			}
			if shell == "" {
				shell = "/bin/sh"
			}
			fmt.Fprintf(&pw, "%s:x:%d:%d:%s:%s:%s\n", u.Name, u.UID, u.GID, u.Name, home, shell)
			fmt.Fprintf(&gr, "%s:x:%d:\n", u.Name, u.GID)
		}
		img.Passwd, img.Group = pw.String(), gr.String()
	}
	return img, nil
}

// WithMappedImages returns the provider with the images among imgs (a target's: its
// operator's and its deploy steps') assembled from rules (MappedImage), to be loaded into
// clusters of the offline node image, which pull nothing; clusters of kind's upstream node
// image pull the real images instead. Images already among Options.Images are left alone; an
// image that no rule maps to programs makes Create fail on the offline node image, naming it.
func (p Provider) WithMappedImages(rules []imagemap.Rule, imgs []string) (cluster.Provider, error) {
	have := map[string]bool{}
	for _, img := range p.Options.Images {
		for _, r := range img.Refs {
			have[r] = true
		}
	}
	mapped := append([]Image(nil), p.Options.Mapped...)
	unmapped := append([]string(nil), p.Options.Unmapped...)
	for _, ref := range imgs {
		if ref == "" || have[ref] {
			continue
		}
		have[ref] = true
		r, ok, err := imagemap.Match(rules, ref)
		if err != nil {
			return nil, err
		}
		if !ok || r.Simulate {
			unmapped = append(unmapped, ref)
			continue
		}
		img, err := MappedImage(ref, r)
		if err != nil {
			return nil, err
		}
		mapped = append(mapped, img)
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
