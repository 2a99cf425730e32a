package deploy_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/vmplane/vmplane/internal/kafka"
	"github.com/vmplane/vmplane/ops/roles"
	"github.com/vmplane/vmplane/projectors/postgres"
	"github.com/vmplane/vmplane/schemas"
)

// grant is one ACL as Kafka evaluates it: a resource pattern and an
// operation, allowed.
type grant struct {
	res      kmsg.ACLResourceType
	name     string // "*" with the literal type is any name
	prefixed bool
	op       kmsg.ACLOperation
}

// resource is one concrete thing a principal acts on.
type resource struct {
	res  kmsg.ACLResourceType
	name string
	op   kmsg.ACLOperation
}

func (r resource) String() string { return fmt.Sprintf("%s %s %s", r.op, r.res, r.name) }

// covers is Kafka's rule: the pattern matches the name, and the operation
// is the one granted, or All, or Describe that Read, Write, Delete or
// Alter imply.
func (g grant) covers(r resource) bool {
	if g.res != r.res {
		return false
	}
	switch {
	case g.prefixed && !strings.HasPrefix(r.name, g.name):
		return false
	case !g.prefixed && g.name != "*" && g.name != r.name:
		return false
	}
	if g.op == r.op || g.op == kmsg.ACLOperationAll {
		return true
	}
	if r.op == kmsg.ACLOperationDescribe {
		switch g.op {
		case kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter:
			return true
		}
	}
	return false
}

func coveredBy(gs []grant, r resource) bool {
	for _, g := range gs {
		if g.covers(r) {
			return true
		}
	}
	return false
}

// TestDocsACLs: the kafka-acls.sh commands of docs/operations.md grant each
// principal what internal/kafka's table (which the dev stack's secured
// broker enforces) lets it do on every vmplane topic, on the cluster, and
// on its own groups and transactional ids, and nothing the table does not
// (the table's any-group may narrow to the role's prefix in the docs).
func TestDocsACLs(t *testing.T) {
	b, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	docs, err := docsGrants(string(b))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "super.users=User:kafka;User:"+kafka.PrincipalAdmin) {
		t.Errorf("docs: %s is a super user in security.go; no super.users line says so", kafka.PrincipalAdmin)
	}
	universe := aclUniverse()
	for _, p := range []string{kafka.PrincipalGateway, kafka.PrincipalAgent, kafka.PrincipalProcessor, kafka.PrincipalProjector} {
		code := codeGrants(p)
		own := ownResources(p)
		needs := 0
		for _, r := range universe {
			inCode, inDocs := coveredBy(code, r), coveredBy(docs[p], r)
			if inCode && !inDocs && (r.res == kmsg.ACLResourceTypeTopic || r.res == kmsg.ACLResourceTypeCluster || own[r.name] == r.res) {
				t.Errorf("%s: security.go allows %s, the docs' commands do not", p, r)
			}
			if inDocs && !inCode {
				t.Errorf("%s: the docs' commands allow %s, security.go does not", p, r)
			}
			if inCode && inDocs {
				needs++
			}
		}
		t.Logf("%s: %d grants in the docs, %d resource operations allowed by both", p, len(docs[p]), needs)
	}
}

// aclUniverse is every operation a role may do on every vmplane topic,
// group and transactional id, and on the cluster.
func aclUniverse() []resource {
	ops := []kmsg.ACLOperation{kmsg.ACLOperationRead, kmsg.ACLOperationWrite, kmsg.ACLOperationDescribe,
		kmsg.ACLOperationIdempotentWrite, kmsg.ACLOperationCreate, kmsg.ACLOperationDelete, kmsg.ACLOperationAlter}
	names := map[kmsg.ACLResourceType][]string{kmsg.ACLResourceTypeCluster: {"kafka-cluster"}}
	for _, tp := range schemas.Topics {
		names[kmsg.ACLResourceTypeTopic] = append(names[kmsg.ACLResourceTypeTopic], tp.Name)
	}
	for _, p := range []string{kafka.PrincipalAgent, kafka.PrincipalProcessor, kafka.PrincipalProjector} {
		for name, rt := range ownResources(p) {
			names[rt] = append(names[rt], name)
		}
	}
	names[kmsg.ACLResourceTypeTransactionalId] = append(names[kmsg.ACLResourceTypeTransactionalId], "vmplane-dlq-redrive")
	var out []resource
	for rt, ns := range names {
		for _, n := range ns {
			for _, op := range ops {
				out = append(out, resource{rt, n, op})
			}
		}
	}
	return out
}

// ownResources are the groups and transactional ids a role uses, by name:
// its consumer groups, and a processor's transactional ids (kind and
// instance; proc-1 stands for any instance).
func ownResources(p string) map[string]kmsg.ACLResourceType {
	own := map[string]kmsg.ACLResourceType{}
	switch p {
	case kafka.PrincipalAgent:
		own["vmplane-agent-hv1-qemu"] = kmsg.ACLResourceTypeGroup // vmplane-agent-<instance>-<prefix>
	case kafka.PrincipalProcessor:
		for _, k := range roles.ProcessorKinds {
			own["vmplane-processor-"+k] = kmsg.ACLResourceTypeGroup
			own["vmplane-processor-"+k+"-proc-1"] = kmsg.ACLResourceTypeTransactionalId
		}
	case kafka.PrincipalProjector:
		own[postgres.DefaultGroup] = kmsg.ACLResourceTypeGroup
		own["vmplane-projector-journal"] = kmsg.ACLResourceTypeGroup
	}
	return own
}

// codeGrants are internal/kafka's ACLs of a principal.
func codeGrants(p string) []grant {
	var out []grant
	for _, a := range kafka.ACLs(p) {
		out = append(out, grant{res: a.Resource, name: a.Name, prefixed: a.Pattern == kmsg.ACLResourcePatternTypePrefixed, op: a.Operation})
	}
	return out
}

// docsGrants reads every kafka-acls.sh command of the text (continued
// lines joined) as kafka-acls.sh does: each operation on each resource,
// all of one command with its --resource-pattern-type.
func docsGrants(text string) (map[string][]grant, error) {
	out := map[string][]grant{}
	lines := strings.Split(strings.ReplaceAll(text, "\\\n", " "), "\n")
	n := 0
	for _, line := range lines {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "kafka-acls.sh ") {
			continue
		}
		n++
		principal, gs, err := parseACLCommand(strings.Fields(line)[1:])
		if err != nil {
			return nil, fmt.Errorf("docs: %s: %w", line, err)
		}
		out[principal] = append(out[principal], gs...)
	}
	if n == 0 {
		return nil, fmt.Errorf("docs: no kafka-acls.sh command")
	}
	return out, nil
}

func parseACLCommand(args []string) (string, []grant, error) {
	var principal string
	var ops []kmsg.ACLOperation
	var res []grant
	prefixed := false
	next := func(i *int) (string, error) {
		if *i+1 >= len(args) {
			return "", fmt.Errorf("%s wants a value", args[*i])
		}
		*i++
		return strings.Trim(args[*i], `'"`), nil
	}
	for i := 0; i < len(args); i++ {
		var v string
		var err error
		switch a := args[i]; a {
		case "$K", "--add":
		case "--cluster":
			res = append(res, grant{res: kmsg.ACLResourceTypeCluster, name: "kafka-cluster"})
		case "--allow-principal":
			if v, err = next(&i); err == nil {
				p, ok := strings.CutPrefix(v, "User:")
				if !ok {
					err = fmt.Errorf("principal %q is not User:NAME", v)
				}
				principal = p
			}
		case "--operation":
			var op kmsg.ACLOperation
			if v, err = next(&i); err == nil {
				op, err = kmsg.ParseACLOperation(v)
				ops = append(ops, op)
			}
		case "--topic", "--group", "--transactional-id":
			rt := map[string]kmsg.ACLResourceType{"--topic": kmsg.ACLResourceTypeTopic, "--group": kmsg.ACLResourceTypeGroup,
				"--transactional-id": kmsg.ACLResourceTypeTransactionalId}[a]
			if v, err = next(&i); err == nil {
				res = append(res, grant{res: rt, name: v})
			}
		case "--resource-pattern-type":
			if v, err = next(&i); err == nil {
				switch v {
				case "prefixed":
					prefixed = true
				case "literal":
				default:
					err = fmt.Errorf("pattern type %q: the examples use literal or prefixed", v)
				}
			}
		default:
			err = fmt.Errorf("%q: not an option these examples use", a)
		}
		if err != nil {
			return "", nil, err
		}
	}
	if principal == "" || len(ops) == 0 || len(res) == 0 {
		return "", nil, fmt.Errorf("want a principal, operations and resources")
	}
	var out []grant
	for _, r := range res {
		for _, op := range ops {
			out = append(out, grant{res: r.res, name: r.name, prefixed: prefixed && r.res != kmsg.ACLResourceTypeCluster, op: op})
		}
	}
	return principal, out, nil
}
