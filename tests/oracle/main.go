// Command dra-oracle evaluates DRA device selectors, quantities and versions with
// Kubernetes' own code, so Modelplane's Python implementation can be checked against it.
//
// It reads JSON lines on stdin and writes one JSON verdict per line on stdout:
//
//	{"id": "a", "expression": "device.driver == \"x\"", "device": {"driver": "x"}}
//	{"id": "b", "quantity": "40Gi", "other": "39Gi"}
//	{"id": "c", "semver": "1.2.3", "other": "1.2.4"}
//
// A selector is checked the way the API server validates a ResourceClaim (at most
// 10 KiB, an estimated cost within the budget) and then evaluated the way the
// scheduler does (k8s.io/dynamic-resource-allocation/cel, runtime cost limit).
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"

	"github.com/blang/semver/v4"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

type attribute struct {
	String  *string `json:"string,omitempty"`
	Bool    *bool   `json:"bool,omitempty"`
	Int     *int64  `json:"int,omitempty"`
	Version *string `json:"version,omitempty"`
}

type capacity struct {
	Value string `json:"value"`
}

type device struct {
	Driver     string               `json:"driver"`
	Attributes map[string]attribute `json:"attributes"`
	Capacity   map[string]capacity  `json:"capacity"`
}

type request struct {
	ID         string  `json:"id"`
	Expression *string `json:"expression"`
	Device     device  `json:"device"`
	Quantity   *string `json:"quantity"`
	Semver     *string `json:"semver"`
	Other      *string `json:"other"`
}

type verdict struct {
	ID        string   `json:"id"`
	Verdict   string   `json:"verdict"`
	Cost      *uint64  `json:"cost,omitempty"`
	Estimate  *uint64  `json:"estimate,omitempty"`
	Error     string   `json:"error,omitempty"`
	Canonical *string  `json:"canonical,omitempty"`
	Sign      *int     `json:"sign,omitempty"`
	Integer   *int64   `json:"integer,omitempty"`
	Float     *float64 `json:"float,omitempty"`
	Major     *uint64  `json:"major,omitempty"`
	Minor     *uint64  `json:"minor,omitempty"`
	Patch     *uint64  `json:"patch,omitempty"`
	Compare   *int     `json:"compare,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	encoder.SetEscapeHTML(false)
	for in.Scan() {
		if len(in.Bytes()) == 0 {
			continue
		}
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintf(os.Stderr, "dra-oracle: bad input line: %v\n", err)
			os.Exit(2)
		}
		if err := encoder.Encode(answer(req)); err != nil {
			fmt.Fprintf(os.Stderr, "dra-oracle: %v\n", err)
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintf(os.Stderr, "dra-oracle: %v\n", err)
		os.Exit(1)
	}
}

func answer(req request) verdict {
	switch {
	case req.Expression != nil:
		return selector(req.ID, *req.Expression, req.Device)
	case req.Quantity != nil:
		return quantity(req.ID, *req.Quantity, req.Other)
	case req.Semver != nil:
		return version(req.ID, *req.Semver, req.Other)
	default:
		return verdict{ID: req.ID, Verdict: "bad_input", Error: "need expression, quantity or semver"}
	}
}

func selector(id, expression string, dev device) (out verdict) {
	// cel-go's validators can panic on some inputs (for example an optional list element
	// of type dyn); the API server would refuse such a selector, so it is a compile error.
	defer func() {
		if r := recover(); r != nil {
			out = verdict{ID: id, Verdict: "compile_error", Error: fmt.Sprintf("panic: %v", r)}
		}
	}()
	// The API server's validation of a CEL device selector (pkg/apis/resource/validation).
	if len(expression) > resourceapi.CELSelectorExpressionMaxLength {
		return verdict{ID: id, Verdict: "compile_error", Error: "too long"}
	}
	compiled := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(expression, dracel.Options{})
	if compiled.Error != nil {
		return verdict{ID: id, Verdict: "compile_error", Error: compiled.Error.Detail}
	}
	if compiled.MaxCost > resourceapi.CELSelectorExpressionMaxCost {
		estimate := compiled.MaxCost
		return verdict{ID: id, Verdict: "compile_error", Cost: &estimate, Error: "too complex, exceeds cost limit"}
	}
	estimate := compiled.MaxCost
	input, err := toDevice(dev)
	if err != nil {
		return verdict{ID: id, Verdict: "runtime_error", Estimate: &estimate, Error: err.Error()}
	}
	matched, details, err := compiled.DeviceMatches(context.Background(), input)
	var cost *uint64
	if details != nil {
		cost = details.ActualCost()
	}
	switch {
	case err != nil:
		return verdict{ID: id, Verdict: "runtime_error", Cost: cost, Estimate: &estimate, Error: err.Error()}
	case matched:
		return verdict{ID: id, Verdict: "match", Cost: cost, Estimate: &estimate}
	default:
		return verdict{ID: id, Verdict: "no_match", Cost: cost, Estimate: &estimate}
	}
}

func toDevice(dev device) (dracel.Device, error) {
	out := dracel.Device{
		Driver:     dev.Driver,
		Attributes: map[resourceapi.QualifiedName]resourceapi.DeviceAttribute{},
		Capacity:   map[resourceapi.QualifiedName]resourceapi.DeviceCapacity{},
	}
	for name, attr := range dev.Attributes {
		out.Attributes[resourceapi.QualifiedName(name)] = resourceapi.DeviceAttribute{
			StringValue: attr.String, BoolValue: attr.Bool, IntValue: attr.Int, VersionValue: attr.Version,
		}
	}
	for name, c := range dev.Capacity {
		value, err := resource.ParseQuantity(c.Value)
		if err != nil {
			return out, fmt.Errorf("capacity %s: %w", name, err)
		}
		out.Capacity[resourceapi.QualifiedName(name)] = resourceapi.DeviceCapacity{Value: value}
	}
	return out, nil
}

func quantity(id, text string, other *string) verdict {
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return verdict{ID: id, Verdict: "error", Error: err.Error()}
	}
	canonical := q.String()
	sign := q.Sign()
	approx := q.AsApproximateFloat64()
	out := verdict{ID: id, Verdict: "ok", Canonical: &canonical, Sign: &sign}
	if !math.IsInf(approx, 0) && !math.IsNaN(approx) {
		out.Float = &approx
	}
	if n, ok := q.AsInt64(); ok {
		out.Integer = &n
	}
	if other != nil {
		o, err := resource.ParseQuantity(*other)
		if err != nil {
			return verdict{ID: id, Verdict: "error", Error: "other: " + err.Error()}
		}
		c := q.Cmp(o)
		out.Compare = &c
	}
	return out
}

func version(id, text string, other *string) verdict {
	v, err := semver.Parse(text)
	if err != nil {
		return verdict{ID: id, Verdict: "error", Error: err.Error()}
	}
	canonical := v.String()
	out := verdict{ID: id, Verdict: "ok", Canonical: &canonical, Major: &v.Major, Minor: &v.Minor, Patch: &v.Patch}
	if other != nil {
		o, err := semver.Parse(*other)
		if err != nil {
			return verdict{ID: id, Verdict: "error", Error: "other: " + err.Error()}
		}
		c := v.Compare(o)
		out.Compare = &c
	}
	return out
}
