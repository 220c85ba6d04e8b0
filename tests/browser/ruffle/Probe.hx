// The SWF tests/browser/test_ruffle.py compiles (`haxe -main Probe -swf probe.swf`) and runs
// in Ruffle: an AS3 NetConnection, declared AMF3 as Flash Player clients declare it, calls
// the gateway named by the `gateway` flash var, and reports every result, fault and
// NetStatus event to the page through ExternalInterface (`amfkitReport(step, kind, json)`).
import flash.events.NetStatusEvent;
import flash.external.ExternalInterface;
import flash.net.NetConnection;
import flash.net.ObjectEncoding;
import flash.net.Responder;
import flash.utils.ByteArray;

class Item {
    public var name:String;
    public var power:Int;

    public function new() {}
}

class Probe {
    static function report(step:String, kind:String, value:Dynamic) {
        ExternalInterface.call("amfkitReport", step, kind, haxe.Json.stringify(value));
    }

    static function call(nc:NetConnection, step:String, target:String, args:Array<Dynamic>) {
        var responder = new Responder(function(r:Dynamic) report(step, "result", r), function(s:Dynamic) report(step, "status", s));
        var all:Array<Dynamic> = [target, responder];
        Reflect.callMethod(nc, Reflect.field(nc, "call"), all.concat(args));
    }

    static function main() {
        untyped __global__["flash.net.registerClassAlias"]("org.amfkit.test.Item", Item);
        var params = flash.Lib.current.loaderInfo.parameters;
        var nc = new NetConnection();
        nc.objectEncoding = ObjectEncoding.AMF3;
        nc.addEventListener(NetStatusEvent.NET_STATUS, function(e:NetStatusEvent) report("netstatus", "event", e.info.code));
        nc.connect(params.gateway);
        call(nc, "echo", "Game.echo", ["hi", 1.5, true]);
        var item = new Item();
        item.name = "sword";
        item.power = 7;
        var bytes = new ByteArray();
        bytes.writeByte(1);
        bytes.writeByte(2);
        var ints = new flash.Vector<Int>();
        ints.push(3);
        var shared = {n: 1};
        call(nc, "kinds", "Game.kinds", [item, bytes, ints, new Date(2020, 0, 2, 3, 4, 5), [[1, 2], [3]], {a: shared, b: shared}, 7]);
        call(nc, "names", "Game.names", [["G2C Online", "x"]]);
        call(nc, "pair", "Game.pair", []);
    }
}
