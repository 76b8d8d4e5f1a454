// Command benchclient sends RunFunctionRequests to a composition function as Crossplane
// does: from objects held as unstructured maps (Crossplane's cache), each request is
// built anew with structpb.NewStruct and encoded with Go's default protobuf marshalling,
// whose map entries (every Struct field) come out in a different order on every call.
// Each requirement's objects are listed by namespace and name, and each request is
// tagged with the SHA-256 of its deterministic encoding, as Crossplane v2.4's
// composition functions do (xfn.ExistingRequiredResourcesFetcher.Fetch, xfn.Tag). All
// calls go over one gRPC connection, as Crossplane's function runner sends them.
//
// It reads a template request (binary RunFunctionRequest) from -request, turns every
// Struct into a map once, then serves commands from stdin, one per line, answering one
// JSON line each on stdout:
//
//	new N          N calls in a row, each with a fleet never seen (fresh uids and pod
//	               templates on other deployments' replicas, as benches.fleets.renew)
//	steady N       N calls in a row with the same objects (re-encoded on every call)
//	touched N      as steady, but the composite changed before each call (its
//	               resourceVersion: a status written), so every request has a new tag
//	concurrent K   K calls at once (never-seen fleets) on the one connection
//	save N         N encodings (the first as loaded, then renewed), uvarint-length
//	               prefixed, to -response, without calling (for in-process profiles)
//	save-steady N  as save, but the same objects every time (only the encoding is new)
//	quit
//
// Each answer gives the wall time of each call (or of all, concurrent), the request sizes,
// the encoding time (the client's, left out of the wall times) and the last response,
// written deterministically to -response so the caller can digest it.
package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	fnv1 "github.com/crossplane/crossplane/v2/proto/fn/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"
)

const (
	clusters       = "inferenceclusters"
	replicas       = "modelreplicas"
	deploymentKey  = "modelplane.ai/deployment"
	ownDeployment  = "qwen"
	maxMessageSize = 256 << 20
)

// fleet is what Crossplane holds: the XR and each required resource as unstructured maps.
type fleet struct {
	template *fnv1.RunFunctionRequest // everything but the required resources
	required map[string][]map[string]any
	order    []string
	touches  int // how often the composite changed (touched)
}

func load(path string) (*fleet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	req := &fnv1.RunFunctionRequest{}
	if err := proto.Unmarshal(b, req); err != nil {
		return nil, fmt.Errorf("cannot decode %s: %w", path, err)
	}
	f := &fleet{required: map[string][]map[string]any{}}
	for _, name := range []string{clusters, replicas} {
		found, ok := req.GetRequiredResources()[name]
		if !ok {
			continue
		}
		f.order = append(f.order, name)
		for _, item := range found.GetItems() {
			f.required[name] = append(f.required[name], item.GetResource().AsMap())
		}
	}
	for name := range req.GetRequiredResources() {
		if _, ok := f.required[name]; !ok {
			f.order = append(f.order, name)
			for _, item := range req.GetRequiredResources()[name].GetItems() {
				f.required[name] = append(f.required[name], item.GetResource().AsMap())
			}
		}
	}
	for _, objs := range f.required {
		listed(objs)
	}
	req.RequiredResources = nil
	f.template = req
	return f, nil
}

// listed orders objects as Crossplane lists a requirement: by namespace and name.
func listed(objs []map[string]any) {
	at := func(i int) string {
		meta := sub(objs[i], "metadata")
		namespace, _ := meta["namespace"].(string)
		name, _ := meta["name"].(string)
		return namespace + "/" + name
	}
	sort.SliceStable(objs, func(i, j int) bool { return at(i) < at(j) })
}

// touch changes the composite as a status write does: a new resourceVersion.
func (f *fleet) touch() {
	f.touches++
	meta := f.template.GetObserved().GetComposite().GetResource().GetFields()["metadata"].GetStructValue()
	if meta != nil {
		meta.Fields["resourceVersion"] = structpb.NewStringValue("touched-" + strconv.Itoa(f.touches))
	}
}

// tag is xfn.Tag: the SHA-256 of the request's deterministic encoding, without its meta.
func tag(req *fnv1.RunFunctionRequest) (string, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(req)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// uid is benches.bench_scheduler.uid: distinct per object and per generation.
func uid(generation, serial int) string {
	return fmt.Sprintf("%08x-0000-4000-8000-%012x", generation, serial)
}

func sub(m map[string]any, keys ...string) map[string]any {
	for _, k := range keys {
		next, _ := m[k].(map[string]any)
		if next == nil {
			return nil
		}
		m = next
	}
	return m
}

// renew makes the fleet one the server never saw, as benches.fleets.renew does: a fresh
// uid on every object (one object answered for two requirements keeps one uid, as in the
// API server), and new pod templates on other deployments' replicas.
func (f *fleet) renew(generation int) {
	names := append([]string(nil), f.order...)
	sort.Strings(names)
	serials := map[string]int{}
	for _, name := range names {
		for _, obj := range f.required[name] {
			kind, _ := obj["kind"].(string)
			meta := sub(obj, "metadata")
			if meta == nil {
				continue
			}
			namespace, _ := meta["namespace"].(string)
			objName, _ := meta["name"].(string)
			key := kind + "/" + namespace + "/" + objName
			serial, seen := serials[key]
			if !seen {
				serial = len(serials)
				serials[key] = serial
			}
			meta["uid"] = uid(generation, serial)
			if kind != "ModelReplica" || sub(obj, "metadata", "labels")[deploymentKey] == ownDeployment {
				continue
			}
			engines, _ := sub(obj, "spec")["engines"].([]any)
			if len(engines) == 0 {
				continue
			}
			members, _ := engines[0].(map[string]any)["members"].([]any)
			if len(members) == 0 {
				continue
			}
			if template := sub(members[0].(map[string]any), "template"); template != nil {
				template["generation"] = strconv.Itoa(generation)
			}
		}
	}
}

// encode builds the request as Crossplane does (xfn.AsStruct: structpb.NewStruct of the
// unstructured content; each listing by namespace and name), tags it (xfn.Tag) and
// marshals it with Go's default options.
func (f *fleet) encode() ([]byte, error) {
	req := proto.Clone(f.template).(*fnv1.RunFunctionRequest)
	req.RequiredResources = map[string]*fnv1.Resources{}
	for _, name := range f.order {
		found := &fnv1.Resources{}
		for _, obj := range f.required[name] {
			s, err := structpb.NewStruct(obj)
			if err != nil {
				return nil, err
			}
			found.Items = append(found.Items, &fnv1.Resource{Resource: s})
		}
		req.RequiredResources[name] = found
	}
	capabilities := req.GetMeta().GetCapabilities()
	req.Meta = nil
	t, err := tag(req)
	if err != nil {
		return nil, err
	}
	req.Meta = &fnv1.RequestMeta{Tag: t, Capabilities: capabilities}
	return proto.Marshal(req)
}

type answer struct {
	Command   string    `json:"command"`
	Seconds   []float64 `json:"seconds"`
	Encode    float64   `json:"encode_seconds"`
	Bytes     []int     `json:"bytes"`
	Responses int       `json:"responses"`
	Error     string    `json:"error,omitempty"`
}

type client struct {
	fleet      *fleet
	conn       *grpc.ClientConn
	generation int
	response   string
}

func (c *client) call(data []byte) (*fnv1.RunFunctionResponse, error) {
	// The bytes go out as encoded (the generated stub would encode the message again,
	// inside the timed call): a codec that passes bytes through, and decodes responses.
	out := &fnv1.RunFunctionResponse{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	err := c.conn.Invoke(ctx, fnv1.FunctionRunnerService_RunFunction_FullMethodName, data, out,
		grpc.ForceCodec(rawCodec{}))
	return out, err
}

func (c *client) keep(rsp *fnv1.RunFunctionResponse) error {
	if c.response == "" {
		return nil
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rsp)
	if err != nil {
		return err
	}
	return os.WriteFile(c.response, b, 0o644)
}

func (c *client) run(command string, n int) answer {
	a := answer{Command: command}
	fail := func(err error) answer { a.Error = err.Error(); return a }
	switch command {
	case "new", "steady", "touched":
		for i := 0; i < n; i++ {
			start := time.Now()
			switch command {
			case "new":
				c.generation++
				c.fleet.renew(c.generation)
			case "touched":
				c.fleet.touch()
			}
			data, err := c.fleet.encode()
			if err != nil {
				return fail(err)
			}
			a.Encode += time.Since(start).Seconds()
			a.Bytes = append(a.Bytes, len(data))
			start = time.Now()
			rsp, err := c.call(data)
			if err != nil {
				return fail(err)
			}
			a.Seconds = append(a.Seconds, time.Since(start).Seconds())
			a.Responses++
			if err := c.keep(rsp); err != nil {
				return fail(err)
			}
		}
	case "concurrent":
		requests := make([][]byte, n)
		start := time.Now()
		for i := range requests {
			c.generation++
			c.fleet.renew(c.generation)
			data, err := c.fleet.encode()
			if err != nil {
				return fail(err)
			}
			requests[i] = data
			a.Bytes = append(a.Bytes, len(data))
		}
		a.Encode = time.Since(start).Seconds()
		responses := make([]*fnv1.RunFunctionResponse, n)
		errs := make([]error, n)
		var wg sync.WaitGroup
		start = time.Now()
		for i := range requests {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				responses[i], errs[i] = c.call(requests[i])
			}(i)
		}
		wg.Wait()
		a.Seconds = []float64{time.Since(start).Seconds()}
		for i, err := range errs {
			if err != nil {
				return fail(err)
			}
			a.Responses++
			if err := c.keep(responses[i]); err != nil {
				return fail(err)
			}
		}
	case "save", "save-steady":
		// N encodings of the fleet (save: never seen if N > 1, each renewed; save-steady:
		// the same objects every time, only their encoding new, as a steady reconcile
		// sends them), one after another as length-prefixed records in -response, for
		// profiling the server in process.
		var all []byte
		for i := 0; i < n; i++ {
			if i > 0 && command == "save" {
				c.generation++
				c.fleet.renew(c.generation)
			}
			data, err := c.fleet.encode()
			if err != nil {
				return fail(err)
			}
			all = binary.AppendUvarint(all, uint64(len(data)))
			all = append(all, data...)
			a.Bytes = append(a.Bytes, len(data))
		}
		if err := os.WriteFile(c.response, all, 0o644); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown command %q", command))
	}
	return a
}

func main() {
	address := flag.String("address", "", "the function's address (host:port)")
	request := flag.String("request", "", "a template RunFunctionRequest, binary")
	response := flag.String("response", "", "where to write the last response, binary (deterministic)")
	flag.Parse()
	f, err := load(*request)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	conn, err := grpc.NewClient(*address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer conn.Close()
	c := &client{fleet: f, conn: conn, response: *response}
	out := json.NewEncoder(os.Stdout)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		words := strings.Fields(in.Text())
		if len(words) == 0 {
			continue
		}
		if words[0] == "quit" {
			return
		}
		n := 1
		if len(words) > 1 {
			if n, err = strconv.Atoi(words[1]); err != nil {
				_ = out.Encode(answer{Command: words[0], Error: err.Error()})
				continue
			}
		}
		_ = out.Encode(c.run(words[0], n))
	}
}

// rawCodec sends []byte as they are and decodes responses as protobuf messages.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	if b, ok := v.([]byte); ok {
		return b, nil
	}
	return proto.Marshal(v.(proto.Message))
}

func (rawCodec) Unmarshal(data []byte, v any) error { return proto.Unmarshal(data, v.(proto.Message)) }

func (rawCodec) Name() string { return "proto" }
