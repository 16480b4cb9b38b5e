package targets

import (
	"fmt"
	"sort"
)

// Images returns, sorted and without duplicates, the container images the
// target's deploy steps run (every container and init container of their
// workloads and pods) and the operator image it names. A campaign on the
// embedded cluster checks them against the image mapping before starting any
// cluster.
func (t *Target) Images() ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(img string) {
		if img != "" && !seen[img] {
			seen[img] = true
			out = append(out, img)
		}
	}
	add(t.Operator.Image)
	for i, step := range t.Deploy {
		objs, err := Render(step)
		if err != nil {
			return nil, fmt.Errorf("target %s: deploy step %d: %w", t.Name, i+1, err)
		}
		for _, o := range objs {
			collectImages(o, add)
		}
	}
	sort.Strings(out)
	return out, nil
}

// collectImages calls add with the image of every container and init
// container found anywhere in obj (a Pod, a workload's pod template, a CronJob's
// job template).
func collectImages(obj any, add func(string)) {
	EachContainer(obj, func(c map[string]any) {
		if img, ok := c["image"].(string); ok {
			add(img)
		}
	})
}

// EachContainer calls fn with every container, init container and ephemeral
// container found anywhere in obj (a Pod, a workload's pod template, a
// CronJob's job template); fn may change the container in place.
func EachContainer(obj any, fn func(c map[string]any)) {
	switch x := obj.(type) {
	case map[string]any:
		for k, v := range x {
			if k == "containers" || k == "initContainers" || k == "ephemeralContainers" {
				if list, ok := v.([]any); ok {
					for _, c := range list {
						if cm, ok := c.(map[string]any); ok {
							fn(cm)
						}
					}
					continue
				}
			}
			EachContainer(v, fn)
		}
	case []any:
		for _, v := range x {
			EachContainer(v, fn)
		}
	}
}
