package schemas

import (
	"fmt"
	"reflect"

	"github.com/vmplane/vmplane/schemas/actions"
)

// VmCommandRecord is a pointer to any command of vm.commands.v1.
type VmCommandRecord interface {
	// Common returns the fields every command carries.
	Common() *VmCommand
}

// Common returns c itself. Every command type embeds VmCommand and so has
// it, which lets a reader reach the common fields of any command without a
// switch over the command types.
func (c *VmCommand) Common() *VmCommand { return c }

// NewVmCommand returns the command record of action a (of the catalog in
// schemas/actions) with the common fields c and the parameters in args, by
// name: a bool for actions.KindBool, a string for actions.KindString, an
// Offering for actions.KindOffering. A parameter left out keeps its zero
// value. An argument the action does not take, or of another type, is an
// error.
func NewVmCommand(a actions.Action, c VmCommand, args map[string]any) (VmCommandRecord, error) {
	v, ok := New(a.Command)
	if !ok {
		return nil, fmt.Errorf("action %s: no record %s", a.Name, a.Command)
	}
	cmd, ok := v.(VmCommandRecord)
	if !ok {
		return nil, fmt.Errorf("action %s: %s is no VM command", a.Name, a.Command)
	}
	*cmd.Common() = c
	rv := reflect.ValueOf(v).Elem()
	for name, arg := range args {
		if _, ok := a.Param(name); !ok {
			return nil, fmt.Errorf("action %s takes no parameter %q", a.Name, name)
		}
		f, ok := fieldByAvroName(rv.Type(), name)
		if !ok {
			return nil, fmt.Errorf("action %s: %s has no field %q", a.Name, a.Command, name)
		}
		av := reflect.ValueOf(arg)
		if !av.IsValid() || av.Type() != f.typ {
			return nil, fmt.Errorf("action %s: parameter %q is %T, want %s", a.Name, name, arg, f.typ)
		}
		rv.FieldByIndex(f.index).Set(av)
	}
	return cmd, nil
}

// AvroField returns the field of struct value v whose Avro name is name,
// an embedded struct's fields included.
func AvroField(v reflect.Value, name string) (reflect.Value, bool) {
	if v.Kind() != reflect.Struct {
		return reflect.Value{}, false
	}
	f, ok := fieldByAvroName(v.Type(), name)
	if !ok {
		return reflect.Value{}, false
	}
	return v.FieldByIndex(f.index), true
}

func fieldByAvroName(t reflect.Type, name string) (field, bool) {
	for _, f := range fieldsOf(t) {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}
