// The X-macros of uapi_facts.inc that read the same in both tables: each adds an entry to the
// Facts `f` in scope. Included inside the function that fills `f`, before uapi_facts.inc; the
// OWN_* macros, which differ between the tables, are defined by each.
#define SIZE(type) f[#type ".sizeof"] = sizeof(type);
#define FIELD(type, member) f[#type "." #member] = offsetof(type, member);
#define VALUE(name) f[#name] = static_cast<uint64_t>(name);
#define SIZE_PREFIX(type) f[#type ".sizeof" kPrefixMark] = sizeof(type);
#define VALUE_PREFIX(name) f[#name kPrefixMark] = static_cast<uint64_t>(name);
