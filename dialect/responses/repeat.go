package responses

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// repeated returns the path of the first member repeated in its object
// anywhere in v ("input[2].call_id"), "" if none is. The codec reads
// every member of a translated request, and a JSON reader may take either
// copy of a repeated one: the request is refused rather than read one way
// here and another by whoever wrote it.
func repeated(v gjson.Result, path string) string {
	switch {
	case v.IsObject():
		var keys []string
		found := ""
		v.ForEach(func(k, m gjson.Result) bool {
			for _, seen := range keys {
				if seen == k.Str {
					found = join(path, k.Str)
					return false
				}
			}
			keys = append(keys, k.Str)
			found = repeated(m, join(path, k.Str))
			return found == ""
		})
		return found
	case v.IsArray():
		found, i := "", 0
		v.ForEach(func(_, m gjson.Result) bool {
			found = repeated(m, path+"["+strconv.Itoa(i)+"]")
			i++
			return found == ""
		})
		return found
	}
	return ""
}

// join appends member k to path.
func join(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}
