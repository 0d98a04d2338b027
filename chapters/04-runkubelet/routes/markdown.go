package routes

import (
	"fmt"
	"io"
	"strings"
)

// link is a citation of the pinned kubernetes source, as the notes write them.
func link(text, path, lines string) string {
	return fmt.Sprintf("[`%s`](https://github.com/kubernetes/kubernetes/blob/v1.37.2/%s#%s)", text, path, lines)
}

// The code the table is made from, cited in the note it generates.
var (
	citeNewServer      = link("func NewServer", "pkg/kubelet/server/server.go", "L340-L378")
	citeSecure         = link("func ListenAndServeKubeletServer", "pkg/kubelet/server/server.go", "L182-L221")
	citeReadOnly       = link("func ListenAndServeKubeletReadOnlyServer", "pkg/kubelet/server/server.go", "L224-L251")
	citeHealthz        = link("healthz.InstallHandler(mux)", "cmd/kubelet/app/server.go", "L992")
	citeFilter         = link("func (s *Server) InstallAuthFilter", "pkg/kubelet/server/server.go", "L381-L433")
	citeAttributes     = link("func (n nodeAuthorizerAttributesGetter) GetRequestAttributes", "pkg/kubelet/server/auth.go", "L83-L157")
	citeDisabled       = link("func (s *Server) InstallDebuggingDisabledHandlers", "pkg/kubelet/server/server.go", "L708-L727")
	citePodResources   = link("func ListenAndServePodResources", "pkg/kubelet/server/server.go", "L254-L272")
	citePodsAPI        = link("func ListenAndServePodsServer", "pkg/kubelet/server/server.go", "L275-L304")
	servers            = []string{Secure, ReadOnly, Healthz}
	generatedBy        = "go test ./chapters/04-runkubelet/routes -update"
	generatorSource    = "../chapters/04-runkubelet/routes/routes.go"
	generatorSourceZh  = "../../chapters/04-runkubelet/routes/routes.go"
	verbsByMethodNote  = "GET `get`, POST `create`, PUT `update`, PATCH `patch`, DELETE `delete`"
	socketPermissionEn = "nothing: whoever may open the socket file"
	socketPermissionZh = "不检查：能打开这个套接字文件的就能调用"
)

// checks renders a route's checks: "GET: `get` `nodes/pods` or `nodes/proxy`".
func (r Route) checks(or string) string {
	var parts []string
	for _, c := range r.Checks {
		var subs []string
		for _, s := range c.Subresources {
			subs = append(subs, "`nodes/"+s+"`")
		}
		prefix := ""
		if len(r.Checks) > 1 {
			prefix = c.Method + ": "
		}
		parts = append(parts, fmt.Sprintf("%s`%s` %s", prefix, c.Verb, strings.Join(subs, or)))
	}
	return strings.Join(parts, "; ")
}

func (r Route) cell(srv string, words map[string]string) string {
	v := r.On[srv]
	for from, to := range words {
		v = strings.ReplaceAll(v, from, to)
	}
	return v
}

// Text writes the table as plain text, one line per path: the golden file.
func (t *Table) Text(w io.Writer) error {
	var b strings.Builder
	for _, r := range t.Routes {
		fmt.Fprintf(&b, "%s", r.Path)
		for _, s := range servers {
			if v, ok := r.On[s]; ok {
				fmt.Fprintf(&b, "  %s=%s", s, v)
			}
		}
		if len(r.Checks) > 0 {
			fmt.Fprintf(&b, "  checks: %s", strings.ReplaceAll(r.checks(" or "), "`", ""))
		}
		b.WriteString("\n")
	}
	for _, s := range t.Services {
		fmt.Fprintf(&b, "%s  %s  %s\n", s.Socket, s.Name, strings.Join(s.Methods, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Markdown writes the note notes/kubelet-routes.md ("en") or notes/zh/kubelet-routes.md ("zh").
func (t *Table) Markdown(w io.Writer, lang string) error {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	zh := lang == "zh"
	if zh {
		p("# kubelet 的 HTTP 路由与套接字（生成）\n\n[English](../kubelet-routes.md)\n\n")
		p("读完本文，你将知道 kubelet 的三个 HTTP 服务器各注册了哪些路径——安全端口 10250（在它的认证与鉴权过滤器之后）、只读端口\n")
		p("10255、健康检查端口 10248——10250 对每个路径检查哪些鉴权属性，以及 kubelet 的两个本地套接字提供哪些 gRPC 服务。\n")
		p("本文没有一处是手写的：`%s` 从 k8s.io/kubernetes v1.37.2 的真实服务器代码生成它（做法见\n", generatedBy)
		p("[routes.go](%s)），同一个测试会在本文过时时失败。\n\n", generatorSourceZh)
		p("## 表是怎么来的\n\n")
		p("- 10250 和 10255 是 %s 构造的服务器，调用方式与\n  %s 和\n  %s 相同；\n", citeNewServer, citeSecure, citeReadOnly)
		p("  10248 是 `run` 用 %s 在一个 ServeMux 上建的。路径读自服务器的 go-restful 容器。\n", citeHealthz)
		p("- 对 10250 上的每个路径和方法，都向服务器发一个请求：它自己的过滤器 %s\n", citeFilter)
		p("  向 kubelet 真实的属性获取器 %s\n", citeAttributes)
		p("  询问要检查什么，再去问鉴权器；这里的鉴权器记下被问到的属性，然后一律拒绝，所以没有处理器被执行。\n")
		p("  资源总是 `nodes`，名字是节点名；子资源按表中顺序尝试，任何一个被允许请求就通过。\n")
		p("- 用 Handle 注册的路径（方法列为“任意”）接受所有方法，动词随方法而定（%s）；表中给出 GET 的检查。\n", verbsByMethodNote)
		p("- “已禁用”：只读服务器注册这个路径，只是为了回答 405（%s）。只读端口什么都不检查。\n", citeDisabled)
		p("- 特性门控取 v1.37.2 的默认值，配置取默认配置文件的值（调试处理器开启）。\n\n")
		p("## HTTP 路由\n\n| 路径 | 10250 | 10255 | 10248 | 10250 检查 |\n| --- | --- | --- | --- | --- |\n")
	} else {
		p("# The kubelet's HTTP routes and sockets (generated)\n\n[中文](zh/kubelet-routes.md)\n\n")
		p("After this note you will understand which paths each of the kubelet's three HTTP servers registers — the\n")
		p("secure port 10250, behind its authentication and authorization filter; the read-only port 10255; the healthz\n")
		p("port 10248 — which authorization attributes 10250 checks for each path, and which gRPC services the kubelet's\n")
		p("two local sockets serve. Nothing here is written by hand: `%s` generates this note from the\n", generatedBy)
		p("real server code of k8s.io/kubernetes v1.37.2 (how: [routes.go](%s)), and the same test fails when the note\nis out of date.\n\n", generatorSource)
		p("## How the table is made\n\n")
		p("- 10250 and 10255 are servers built by %s, called as\n  %s and\n  %s call it;\n", citeNewServer, citeSecure, citeReadOnly)
		p("  10248 is the mux `run` builds with %s. The paths are read from each server's go-restful container.\n", citeHealthz)
		p("- For each path and method of 10250, a request is sent through the server: its own filter, %s,\n", citeFilter)
		p("  asks the kubelet's real attributes getter, %s,\n", citeAttributes)
		p("  what to check, then asks the authorizer; the authorizer given here records what it is asked and denies, so no\n")
		p("  handler runs. The resource is always `nodes`, the name the node's; the subresources are tried in the order\n")
		p("  shown, and any one allowed lets the request through.\n")
		p("- Paths registered with Handle (methods: any) take every method, and the verb follows the method (%s);\n", verbsByMethodNote)
		p("  the table shows the check for GET.\n")
		p("- disabled: the read-only server registers the path only to answer 405 (%s).\n", citeDisabled)
		p("  The read-only port checks nothing.\n")
		p("- Feature gates at their v1.37.2 defaults; the configuration a config file with nothing in it gives (the\n")
		p("  debugging handlers on).\n\n")
		p("## HTTP routes\n\n| path | 10250 | 10255 | 10248 | checked on 10250 |\n| --- | --- | --- | --- | --- |\n")
	}
	words, or := map[string]string{}, " or "
	if zh {
		words, or = map[string]string{"any": "任意", "disabled": "已禁用"}, " 或 "
	}
	for _, r := range t.Routes {
		p("| `%s` | %s | %s | %s | %s |\n", r.Path, r.cell(Secure, words), r.cell(ReadOnly, words), r.cell(Healthz, words), r.checks(or))
	}
	if zh {
		p("\n## gRPC 套接字\n\n")
		p("由 %s 和\n%s 提供；路径相对于 kubelet 的根目录。\n\n", citePodResources, citePodsAPI)
		p("| 套接字 | 服务 | 方法 | 检查 |\n| --- | --- | --- | --- |\n")
	} else {
		p("\n## gRPC sockets\n\n")
		p("Served by %s and\n%s; paths under the kubelet's root directory.\n\n", citePodResources, citePodsAPI)
		p("| socket | service | methods | checked |\n| --- | --- | --- | --- |\n")
	}
	for _, s := range t.Services {
		var ms []string
		for _, m := range s.Methods {
			ms = append(ms, "`"+m+"`")
		}
		check := socketPermissionEn
		if zh {
			check = socketPermissionZh
		}
		p("| `%s` | `%s` | %s | %s |\n", strings.TrimPrefix(s.Socket, "/"), s.Name, strings.Join(ms, " "), check)
	}
	if zh {
		p("\n## 下一步\n\n- 同步循环与这些服务器背后的 kubelet：[07-syncloop.md](07-syncloop.md)。\n")
		p("- 客户端应当如何调用这些路径：[11-client.md](11-client.md)。\n- 所有笔记的总览：[README.md](README.md)。\n")
	} else {
		p("\n## Next\n\n- The kubelet behind these servers, its sync loop: [07-syncloop.md](07-syncloop.md).\n")
		p("- How a client should call these paths: [11-client.md](11-client.md).\n- The map of all notes: [README.md](README.md).\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
