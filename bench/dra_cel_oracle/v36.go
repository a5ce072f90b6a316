//go:build v36

package main

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
)

func features(m map[string]bool) cel.Features {
	return cel.Features{EnableConsumableCapacity: m["consumableCapacity"], EnableListTypeAttributes: m["listTypeAttributes"]}
}

func enhance(err error) error { return err }

func toAttr(a attr) resourceapi.DeviceAttribute {
	return resourceapi.DeviceAttribute{IntValue: a.Int, BoolValue: a.Bool, StringValue: a.String, VersionValue: a.Version,
		IntValues: a.Ints, BoolValues: a.Bools, StringValues: a.Strings, VersionValues: a.Versions}
}
