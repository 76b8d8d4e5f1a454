// Command dra-oracle evaluates DRA device selectors, quantities and versions with
// Kubernetes' own code, so Modelplane's Python implementation can be checked against it.
//
// It reads JSON lines on stdin and writes one JSON verdict per line on stdout:
//
//	{"id": "a", "expression": "device.driver == \"x\"", "device": {"driver": "x"}}
//	{"id": "b", "quantity": "40Gi", "other": "39Gi"}
//	{"id": "c", "semver": "1.2.3", "other": "1.2.4"}
//
// A selector takes the path it takes in a Kubernetes v1.35 cluster with the default
// feature gates:
//
//  1. kube-apiserver validates a new ResourceClaim carrying it
//     (k8s.io/kubernetes/pkg/apis/resource/validation.ValidateResourceClaim): at most
//     10 KiB, compiled in the NewExpressions CEL environment of its compatibility version
//     with the DRA device type its feature gates select, estimated cost within budget.
//     Any error there is a compile_error; the estimate comes from the same compilation.
//  2. The scheduler compiles it through its CEL cache (StoredExpressions environment, no
//     cost estimate) and matches the device as its allocator does (driver, attributes,
//     capacity), with the runtime cost limit.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/blang/semver/v4"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/environment"
	apiservercompat "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompat "k8s.io/component-base/compatibility"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	internalresource "k8s.io/kubernetes/pkg/apis/resource"
	resourcevalidation "k8s.io/kubernetes/pkg/apis/resource/validation"
	"k8s.io/kubernetes/pkg/features"
)

// kubernetesVersion is the Kubernetes minor version the oracle stands for: the binary
// version of kube-apiserver and kube-scheduler, whose default feature gates apply.
const kubernetesVersion = "1.35"

// selectorPath is where ValidateResourceClaim reports errors about the selector.
var selectorPath = field.NewPath("spec", "devices", "requests").Index(0).Child("exactly", "selectors").Index(0)

// schedulerCache is the scheduler's compile cache (dynamicresources.New builds it so).
var schedulerCache *dracel.Cache

// draFeatures are the feature gates the DRA CEL compiler takes, as kube-apiserver's
// validation and the scheduler read them from the default feature gate.
func draFeatures() dracel.Features {
	return dracel.Features{EnableConsumableCapacity: utilfeature.DefaultFeatureGate.Enabled(features.DRAConsumableCapacity)}
}

// checkVersion fails unless this binary behaves as kube-apiserver v1.35: effective
// version 1.35, CEL compatibility version 1.34 (which picks the NewExpressions
// environment), feature gates at their 1.35 defaults.
func checkVersion() error {
	effective := apiservercompat.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompat.DefaultKubeComponent)
	if effective == nil {
		return fmt.Errorf("no effective version registered for %s", basecompat.DefaultKubeComponent)
	}
	if got := effective.BinaryVersion(); fmt.Sprintf("%d.%d", got.Major(), got.Minor()) != kubernetesVersion {
		return fmt.Errorf("binary version %s, want %s", got, kubernetesVersion)
	}
	if got := effective.EmulationVersion(); fmt.Sprintf("%d.%d", got.Major(), got.Minor()) != kubernetesVersion {
		return fmt.Errorf("emulation version %s, want %s", got, kubernetesVersion)
	}
	compat := environment.DefaultCompatibilityVersion()
	if want := effective.BinaryVersion().SubtractMinor(1); compat.Major() != want.Major() || compat.Minor() != want.Minor() {
		return fmt.Errorf("CEL compatibility version %s, want %d.%d", compat, want.Major(), want.Minor())
	}
	if got := utilfeature.DefaultMutableFeatureGate.EmulationVersion(); fmt.Sprintf("%d.%d", got.Major(), got.Minor()) != kubernetesVersion {
		return fmt.Errorf("feature gate emulation version %s, want %s", got, kubernetesVersion)
	}
	return nil
}

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
	if err := checkVersion(); err != nil {
		fmt.Fprintf(os.Stderr, "dra-oracle: not Kubernetes %s: %v\n", kubernetesVersion, err)
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == "-version" {
		fmt.Printf("kubernetes %s, CEL compatibility %s, DRAConsumableCapacity %t\n",
			kubernetesVersion, environment.DefaultCompatibilityVersion(), draFeatures().EnableConsumableCapacity)
		return
	}
	schedulerCache = dracel.NewCache(10, draFeatures())
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

	// 1. kube-apiserver: validate a ResourceClaim created with this selector.
	if errs := validateClaim(expression); len(errs) > 0 {
		out = verdict{ID: id, Verdict: "compile_error", Error: describe(errs)}
		if errs[0].Type == field.ErrorTypeForbidden {
			// Too complex: report the estimate the validation compared with the limit.
			estimate := newExpression(expression).MaxCost
			out.Cost = &estimate
		}
		return out
	}
	estimate := newExpression(expression).MaxCost

	// 2. kube-scheduler: its CEL cache, then the allocator's device match.
	compiled := schedulerCache.GetOrCompile(expression)
	if compiled.Error != nil {
		return verdict{ID: id, Verdict: "runtime_error", Estimate: &estimate, Error: "scheduler: CEL compile error: " + compiled.Error.Detail}
	}
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

// validateClaim runs kube-apiserver's validation of a new ResourceClaim whose one request
// selects devices with expression, and returns the errors about that selector. Any other
// error means the claim built here is wrong, which is the oracle's bug.
func validateClaim(expression string) field.ErrorList {
	claim := &internalresource.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "claim", Namespace: "default"},
		Spec: internalresource.ResourceClaimSpec{Devices: internalresource.DeviceClaim{
			Requests: []internalresource.DeviceRequest{{
				Name: "gpu",
				Exactly: &internalresource.ExactDeviceRequest{
					DeviceClassName: "gpu.example.com",
					AllocationMode:  internalresource.DeviceAllocationModeExactCount,
					Count:           1,
					Selectors: []internalresource.DeviceSelector{{
						CEL: &internalresource.CELDeviceSelector{Expression: expression},
					}},
				},
			}},
		}},
	}
	var errs field.ErrorList
	for _, err := range resourcevalidation.ValidateResourceClaim(claim) {
		if !strings.HasPrefix(err.Field, selectorPath.String()) {
			panic(fmt.Sprintf("oracle bug: the claim itself is invalid: %v", err))
		}
		errs = append(errs, err)
	}
	return errs
}

// newExpression compiles as ValidateResourceClaim does (NewExpressions environment,
// feature gates, cost estimate): the source of the static estimate.
func newExpression(expression string) dracel.CompilationResult {
	envType := environment.NewExpressions
	return dracel.GetCompiler(draFeatures()).CompileCELExpression(expression, dracel.Options{EnvType: &envType})
}

func describe(errs field.ErrorList) string {
	parts := make([]string, 0, len(errs))
	for _, err := range errs {
		detail := err.Detail
		if detail == "" {
			detail = err.ErrorBody()
		}
		parts = append(parts, detail)
	}
	return strings.Join(parts, "; ")
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
