// Upstream's answers for tests/plugins/data/dra_cel_*.json: reads the cases (one JSON array) on stdin and
// prints, per case, what k8s.io/dynamic-resource-allocation/cel's CompileCELExpression (stored expressions,
// as the scheduler's cache compiles) and DeviceMatches return; build with -tags v35, v36 or v37 against
// that minor's modules (docs/dra-cel.md, "Regenerating the expectations").
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"
)

type attr struct {
	Int      *int64   `json:"int,omitempty"`
	Bool     *bool    `json:"bool,omitempty"`
	String   *string  `json:"string,omitempty"`
	Version  *string  `json:"version,omitempty"`
	Ints     []int64  `json:"ints,omitempty"`
	Bools    []bool   `json:"bools,omitempty"`
	Strings  []string `json:"strings,omitempty"`
	Versions []string `json:"versions,omitempty"`
}

type tc struct {
	Name       string            `json:"name"`
	Expression string            `json:"expression"`
	Driver     string            `json:"driver"`
	Multi      *bool             `json:"allowMultipleAllocations"`
	Attributes map[string]attr   `json:"attributes"`
	Capacity   map[string]string `json:"capacity"`
	Env        string            `json:"env"` // "stored" (default) or "new"
	Features   map[string]bool   `json:"features"`
}

type out struct {
	Name         string  `json:"name"`
	CompileError *string `json:"compileError"`
	MaxCost      uint64  `json:"maxCost"`
	Match        *bool   `json:"match"`
	MatchError   *string `json:"matchError"`
	ActualCost   uint64  `json:"actualCost"`
}

func main() {
	var cases []tc
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		panic(err)
	}
	enc := json.NewEncoder(os.Stdout)
	for _, c := range cases {
		envType := environment.StoredExpressions
		if c.Env == "new" {
			envType = environment.NewExpressions
		}
		f := features(c.Features)
		res := cel.GetCompiler(f).CompileCELExpression(c.Expression, cel.Options{EnvType: &envType})
		o := out{Name: c.Name, MaxCost: res.MaxCost}
		if res.Error != nil {
			o.CompileError = ptr.To(res.Error.Error())
			enc.Encode(o)
			continue
		}
		d := cel.Device{Driver: c.Driver, AllowMultipleAllocations: c.Multi,
			Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
			Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{}}
		for k, a := range c.Attributes {
			d.Attributes[resourceapi.QualifiedName(k)] = toAttr(a)
		}
		for k, q := range c.Capacity {
			d.Capacity[resourceapi.QualifiedName(k)] = resourceapi.DeviceCapacity{Value: resource.MustParse(q)}
		}
		m, details, err := res.DeviceMatches(context.Background(), d)
		o.ActualCost = ptr.Deref(details.ActualCost(), 0)
		if err != nil {
			o.MatchError = ptr.To(enhance(err).Error())
		} else {
			o.Match = &m
		}
		enc.Encode(o)
	}
	fmt.Fprintln(os.Stderr, "done")
}
