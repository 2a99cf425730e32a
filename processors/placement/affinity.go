package placement

import "strings"

// Affinity groups (PlaceVm.affinity_group). A group belongs to the VM's
// account. The name says its type:
//
//	"web" or "anti:web"  host anti-affinity (CloudStack's default type): no
//	                     two VMs of the group on one host
//	"affinity:web"       host affinity: every VM of the group on the host
//	                     the group's first VM got
//
// The gateway accepts plain names only, so VMs deployed through the API get
// anti-affinity; the prefixes are for other producers and tests.
const (
	affinityPrefix     = "affinity:"
	antiAffinityPrefix = "anti:"
)

// affinityOf returns the group key (account/kind:name) of a request's
// group and whether it is anti-affinity; "" for no group.
func affinityOf(account, group string) (key string, anti bool) {
	switch {
	case group == "":
		return "", false
	case strings.HasPrefix(group, affinityPrefix):
		return account + "/" + group, false
	case strings.HasPrefix(group, antiAffinityPrefix):
		return account + "/" + group, true
	default:
		return account + "/" + antiAffinityPrefix + group, true
	}
}

// affinityOfKey is affinityOf for a key stored in an allocation.
func affinityOfKey(key string) (string, bool) {
	if key == "" {
		return "", false
	}
	_, kind, _ := strings.Cut(key, "/")
	return key, !strings.HasPrefix(kind, affinityPrefix)
}
